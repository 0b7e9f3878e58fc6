public import FeatureFlags

/// A ``Reachability`` a test switches by hand: `set(false)` is "the path went down".
public final class ManualReachability: Reachability {
    private let current: Locked<Bool>
    private let stream = Broadcaster<Bool>(replay: 1)

    /// Starts `reachable` (default yes).
    public init(_ reachable: Bool = true) {
        current = Locked(reachable)
        stream.yield(reachable)
    }

    /// The value last set.
    public var isReachable: Bool { current.withLock { $0 } }
    /// The current value, then every change.
    public func updates() -> AsyncStream<Bool> { stream.subscribe() }
    /// Ends the streams.
    public func stop() { stream.finish() }

    /// Sets reachability; subscribers hear about it only when it changes.
    public func set(_ reachable: Bool) {
        let changed = current.withLock { value -> Bool in
            defer { value = reachable }
            return value != reachable
        }
        if changed { stream.yield(reachable) }
    }
}
