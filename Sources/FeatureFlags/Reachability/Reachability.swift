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
package enum SystemReachability {
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
