/// Whether a network path exists, and its changes: the provider fetches only while it does.
public protocol Reachability: Sendable {
    /// Whether a network path exists now.
    var isReachable: Bool { get }
    /// The current answer first, then each change; ends after ``stop()``.
    func updates() -> AsyncStream<Bool>
    /// Stops monitoring and ends the update streams. Idempotent.
    func stop()
}

/// The platform's reachability monitor.
internal enum SystemReachability {
    /// `NWPathMonitor` on Apple platforms, netlink on Linux, "always reachable" elsewhere.
    public static func make() -> any Reachability {
        #if canImport(Network)
        return PathMonitorReachability()
        #elseif os(Linux)
        return LinuxReachability()
        #else
        return AlwaysReachable()
        #endif
    }

    /// Whether `reachability` is a monitor ``make()`` made, not one the app gave.
    static func made(_ reachability: any Reachability) -> Bool {
        #if canImport(Network)
        return reachability is PathMonitorReachability
        #elseif os(Linux)
        return reachability is LinuxReachability
        #else
        return false
        #endif
    }
}

/// A network path as `NWPath.Status` reports it; kept outside the Apple-only monitor to be tested everywhere.
enum PathStatus {
    /// The path can carry traffic now.
    case satisfied
    /// Down until a connection (such as a fetch) brings it up: on-demand VPN, sleeping cellular.
    case requiresConnection
    /// No path.
    case unsatisfied

    /// Whether a fetch is worth sending; `requiresConnection` counts, or it would never come up.
    var allowsFetching: Bool { self != .unsatisfied }
}

/// Always reachable and always in the foreground: for servers, tools and platforms without app notifications
/// (fetch failures still count as evidence of offline).
package final class AlwaysOn: Reachability, AppLifecycle {
    private let stream = LatestValueStream(true)

    /// Always on.
    public init() {}
    /// `true`.
    public var isReachable: Bool { true }
    /// `true`.
    public var isForeground: Bool { true }
    /// `true`, once.
    public func updates() -> AsyncStream<Bool> { stream.subscribe() }
    /// Ends the streams.
    public func stop() { stream.finish() }
}

/// A path that is always up.
package typealias AlwaysReachable = AlwaysOn
/// An app that is always in the foreground.
package typealias AlwaysForeground = AlwaysOn
