#if canImport(Network)
import Dispatch
import Network

/// ``Reachability`` from `NWPathMonitor`: reachable while the path's status is `.satisfied`.
final class PathMonitorReachability: Reachability {
    private let monitor: NWPathMonitor
    private let queue = DispatchQueue(label: "FeatureFlags.PathMonitorReachability")
    private let current = Locked<Bool>(true)
    private let stream = LatestValueStream(true)

    /// Starts monitoring every interface type.
    init() {
        monitor = NWPathMonitor()
        monitor.pathUpdateHandler = { [current, stream] path in
            let reachable = path.status == .satisfied
            let changed = current.withLock { value -> Bool in
                defer { value = reachable }
                return value != reachable
            }
            if changed { stream.yield(reachable) }
        }
        monitor.start(queue: queue)
    }

    /// Whether the current path is satisfied.
    var isReachable: Bool { current.withLock { $0 } }
    /// The current answer, then changes.
    func updates() -> AsyncStream<Bool> { stream.subscribe() }
    /// Cancels the monitor. Idempotent.
    func stop() {
        monitor.cancel()
        stream.finish()
    }

    deinit { stop() }
}
#endif
