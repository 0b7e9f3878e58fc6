/// Any `Clock<Duration>` seen as "time since creation", so that instants can be stored and
/// passed around without making the provider and the fetcher generic over their clock.
protocol ElapsedClock: Sendable {
    /// Time since creation.
    func now() -> Duration
    /// Sleeps until `now() >= deadline`; a deadline further than `Duration.longestWait` ahead
    /// (about 136 years) is that far ahead, so that no caller's duration can trap the clock.
    func sleep(until deadline: Duration) async throws
    /// Whether this is the system's continuous clock (not one a test injected). Asked instead
    /// of a dynamic cast, which costs the runtime an existential type's set-up at launch.
    var isSystemClock: Bool { get }
}

extension ElapsedClock {
    /// Not the system's clock, unless the clock says so.
    var isSystemClock: Bool { false }

    /// `deadline`, or `now() + Duration.longestWait` when it lies further ahead: what every
    /// `sleep(until:)` sleeps until (a clock traps on an instant whose seconds do not fit `Int64`).
    func boundedDeadline(_ deadline: Duration) -> Duration { min(deadline, now() + .longestWait) }
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
        try await clock.sleep(until: start.advanced(by: boundedDeadline(deadline)), tolerance: nil)
    }
}

/// The system's continuous clock, without the generic adapter (whose first use in a process
/// costs a conformance lookup at launch).
struct ContinuousElapsedClock: ElapsedClock {
    let start = ContinuousClock.now
    var isSystemClock: Bool { true }

    func now() -> Duration { start.duration(to: .now) }

    func sleep(until deadline: Duration) async throws {
        try await ContinuousClock().sleep(until: start.advanced(by: boundedDeadline(deadline)), tolerance: nil)
    }
}

func makeElapsedClock(_ clock: some Clock<Duration>) -> any ElapsedClock {
    if clock is ContinuousClock { return ContinuousElapsedClock() }
    return ClockAdapter(clock)
}
