/// Any `Clock<Duration>` seen as "time since creation", so that instants can be stored and
/// passed around without making the provider and the fetcher generic over their clock.
protocol ElapsedClock: Sendable {
    /// Time since creation.
    func now() -> Duration
    /// Sleeps until `now() >= deadline`.
    func sleep(until deadline: Duration) async throws
    /// Whether this is the system's continuous clock (not one a test injected). Asked instead
    /// of a dynamic cast, which costs the runtime an existential type's set-up at launch.
    var isSystemClock: Bool { get }
}

extension ElapsedClock {
    /// Not the system's clock, unless the clock says so.
    var isSystemClock: Bool { false }
}

struct ClockAdapter<C: Clock>: ElapsedClock where C.Duration == Duration {
    let clock: C
    let start: C.Instant

    init(_ clock: C) {
        self.clock = clock
        self.start = clock.now
    }

    func now() -> Duration { start.duration(to: clock.now) }

    func sleep(until deadline: Duration) async throws {
        try await clock.sleep(until: start.advanced(by: deadline), tolerance: nil)
    }
}

/// The system's continuous clock, without the generic adapter (whose first use in a process
/// costs a conformance lookup at launch).
struct ContinuousElapsedClock: ElapsedClock {
    let start = ContinuousClock.now
    var isSystemClock: Bool { true }

    func now() -> Duration { start.duration(to: .now) }

    func sleep(until deadline: Duration) async throws {
        try await ContinuousClock().sleep(until: start.advanced(by: deadline), tolerance: nil)
    }
}

func makeElapsedClock(_ clock: some Clock<Duration>) -> any ElapsedClock {
    if clock is ContinuousClock { return ContinuousElapsedClock() }
    return ClockAdapter(clock)
}

/// A one-shot wake-up for a single waiting task: ``fire()`` before ``wait()`` is remembered.
package final class Wakeup: Sendable {
    package init() {}
    /// Whether it was fired with nobody waiting, and how to resume who waits. The waiter is
    /// kept as a closure, not as a continuation: built at every provider's launch, a stored
    /// `CheckedContinuation` makes the runtime complete this type's layout the first time (and
    /// look up a conformance), a closure does not.
    private struct State {
        var pending = false
        var waiter: (@Sendable () -> Void)?
    }

    private let state = Locked(State())

    /// Wakes the waiter, or the next one to wait.
    package func fire() {
        let waiter = state.withLock { s -> (@Sendable () -> Void)? in
            guard let waiter = s.waiter else {
                s.pending = true
                return nil
            }
            s.waiter = nil
            return waiter
        }
        waiter?()
    }

    /// Returns when fired (at once if fired since the last wait) or when the task is cancelled.
    package func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s -> Bool in
                    if s.pending || Task.isCancelled {
                        s.pending = false
                        return true
                    }
                    s.waiter = { continuation.resume() }
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { s -> (@Sendable () -> Void)? in
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?()
        }
    }
}
