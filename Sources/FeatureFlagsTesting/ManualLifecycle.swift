public import FeatureFlags

/// An ``AppLifecycle`` a test switches by hand: `set(false)` is "the app went to the background".
public final class ManualLifecycle: AppLifecycle {
    private let current: Locked<Bool>
    private let stream = Broadcaster<Bool>(replay: 1)

    /// Starts in the foreground unless told otherwise.
    public init(foreground: Bool = true) {
        current = Locked(foreground)
        stream.yield(foreground)
    }

    /// The value last set.
    public var isForeground: Bool { current.withLock { $0 } }
    /// The current value, then every change.
    public func updates() -> AsyncStream<Bool> { stream.subscribe() }
    /// Ends the streams.
    public func stop() { stream.finish() }

    /// Moves the app to the foreground (`true`) or the background; subscribers hear about it
    /// only when it changes.
    public func set(foreground: Bool) {
        let changed = current.withLock { value -> Bool in
            defer { value = foreground }
            return value != foreground
        }
        if changed { stream.yield(foreground) }
    }
}
