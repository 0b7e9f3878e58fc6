/// "Is there a network path?" plus a stream of changes. The provider stops fetching while
/// the answer is no and fetches at once when it turns yes.
///
/// ``SystemReachability/make()`` gives the platform's monitor (`NWPathMonitor` on Apple
/// platforms, netlink route and link events on Linux); ``AlwaysReachable`` suits servers and
/// tools; `ManualReachability` in FeatureFlagsTesting is for tests.
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

    /// Whether `reachability` is a monitor ``make()`` made, not one the app gave (a check of a
    /// final class, which searches no conformance).
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

/// A network path as Apple's path monitor reports it (`NWPath.Status`), and what it means for
/// a fetch: the decision lives here, outside the Apple-only monitor, so that it is tested on
/// every platform.
enum PathStatus {
    /// The path can carry traffic now.
    case satisfied
    /// The path is down until a connection brings it up: an on-demand VPN, a cellular link
    /// asleep. A fetch is such a connection.
    case requiresConnection
    /// No path.
    case unsatisfied

    /// Whether a fetch is worth sending. A path that requires a connection counts as a path:
    /// were it taken for none, nothing would ever connect and bring it up — a device behind an
    /// on-demand VPN would never fetch. A fetch that then fails says so as any failure does.
    var allowsFetching: Bool { self != .unsatisfied }
}

/// Reachability that always says yes: for servers, command-line tools and platforms with no
/// monitor. Fetch failures still count as evidence of being offline.
package final class AlwaysReachable: Reachability {
    private let stream = LatestValueStream(true)

    /// Always reachable.
    public init() {}
    /// `true`.
    public var isReachable: Bool { true }
    /// `true`, once.
    public func updates() -> AsyncStream<Bool> { stream.subscribe() }
    /// Ends the streams.
    public func stop() { stream.finish() }
}
