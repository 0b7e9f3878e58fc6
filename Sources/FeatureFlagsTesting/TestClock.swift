import FeatureFlags

/// A `Clock` that moves only when a test says so, so tests of polling, backoff and deadlines
/// never sleep. Sleepers wake in deadline order when ``advance(by:)`` passes their deadline;
/// cancelled sleepers end at once with `CancellationError`.
///
/// ```swift
/// let clock = TestClock()
/// let provider = FeatureFlagProvider(…, clock: clock)
/// await clock.sleepers(atLeast: 1)     // the poll loop is waiting
/// clock.advance(by: .seconds(300))     // the poll fires
/// ```
public final class TestClock: Clock {
    /// A point on the test clock: the time since the clock's creation.
    public struct Instant: InstantProtocol, CustomStringConvertible {
        /// Time since the clock started.
        public let offset: Duration
        /// An instant `offset` after the start.
        public init(offset: Duration) { self.offset = offset }
        /// This instant moved by `duration`.
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        /// The duration from this instant to `other`.
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        /// Earlier first.
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
        /// `+12.5 seconds`.
        public var description: String { "+\(offset)" }
    }

    private struct Sleeper {
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID = 0
        var sleepers: [Int: Sleeper] = [:]
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Locked(State())

    /// A clock at offset zero.
    public init() {}

    /// The current instant.
    public var now: Instant { state.withLock { $0.now } }
    /// No resolution limit.
    public var minimumResolution: Duration { .zero }

    /// The deadlines of everything sleeping now, earliest first.
    public var sleeperDeadlines: [Instant] { state.withLock { $0.sleepers.values.map(\.deadline).sorted() } }

    /// How many tasks are sleeping now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// Sleeps until the clock is advanced to `deadline`.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { s -> Int in
            s.nextID += 1
            return s.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (resumeNow, watchers) = state.withLock { s -> (Bool, [CheckedContinuation<Void, Never>]) in
                    if Task.isCancelled || deadline <= s.now { return (true, []) }
                    s.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return (false, Self.satisfiedWatchers(&s))
                }
                for watcher in watchers { watcher.resume() }
                if resumeNow {
                    if Task.isCancelled {
                        continuation.resume(throwing: CancellationError())
                    } else {
                        continuation.resume()
                    }
                }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock forward by `duration`, waking every sleeper whose deadline is reached,
    /// earliest first.
    public func advance(by duration: Duration) {
        let due = state.withLock { s -> [Sleeper] in
            s.now = s.now.advanced(by: duration)
            let now = s.now
            let ready = s.sleepers.filter { $0.value.deadline <= now }.sorted { $0.value.deadline < $1.value.deadline }
            for (id, _) in ready { s.sleepers[id] = nil }
            return ready.map(\.value)
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Moves the clock to the earliest sleeper's deadline (if any) and wakes it.
    /// Returns the time advanced, or nil when nothing sleeps.
    @discardableResult
    public func advanceToNextDeadline() -> Duration? {
        guard let next = sleeperDeadlines.first else { return nil }
        let step = max(.zero, now.duration(to: next))
        advance(by: step)
        return step
    }

    /// Returns once at least `count` tasks are sleeping on this clock.
    public func sleepers(atLeast count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s -> Bool in
                if s.sleepers.count >= count { return true }
                s.watchers.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private static func satisfiedWatchers(_ s: inout State) -> [CheckedContinuation<Void, Never>] {
        let count = s.sleepers.count
        let ready = s.watchers.filter { $0.count <= count }.map(\.continuation)
        s.watchers.removeAll { $0.count <= count }
        return ready
    }
}
