#if canImport(Network)
import Dispatch
import Network

/// ``Reachability`` from `NWPathMonitor`: reachable unless `.unsatisfied` (see ``PathStatus/allowsFetching``).
final class PathMonitorReachability: Reachability {
    private let monitor: NWPathMonitor
    private let queue = DispatchQueue(label: "FeatureFlags.PathMonitorReachability")
    private let stream = LatestValueStream(true)

    /// Starts monitoring every interface type.
    init() {
        monitor = NWPathMonitor()
        monitor.pathUpdateHandler = { [stream] path in stream.send(PathMonitorReachability.status(of: path).allowsFetching) }
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
    var isReachable: Bool { stream.latest ?? true }
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
