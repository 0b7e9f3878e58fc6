#if canImport(Network)
import Dispatch
import Network

/// ``Reachability`` from `NWPathMonitor`: reachable unless `.unsatisfied` (see ``PathStatus/allowsFetching``).
final class PathMonitorReachability: Reachability {
    private let monitor: NWPathMonitor
    private let queue = DispatchQueue(label: "FeatureFlags.PathMonitorReachability")
    private let current = Locked<Bool>(true)
    private let stream = LatestValueStream(true)

    /// Starts monitoring every interface type.
    init() {
        monitor = NWPathMonitor()
        monitor.pathUpdateHandler = { [current, stream] path in
            let reachable = PathMonitorReachability.status(of: path).allowsFetching
            let changed = current.withLock { value -> Bool in
                defer { value = reachable }
                return value != reachable
            }
            if changed { stream.yield(reachable) }
        }
        monitor.start(queue: queue)
    }

    /// The path's status as ``PathStatus`` (unknown future statuses count as a path).
    static func status(of path: NWPath) -> PathStatus {
        switch path.status {
        case .satisfied: return .satisfied
        case .unsatisfied: return .unsatisfied
        case .requiresConnection: return .requiresConnection
        @unknown default: return .requiresConnection
        }
    }

    /// Whether the current path can be used (satisfied, or up once a connection asks for it).
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
