/// Any `Clock<Duration>` as "time since creation", so the provider and fetcher need not be generic.
protocol ElapsedClock: Sendable {
    /// Time since creation.
    func now() -> Duration
    /// Sleeps until `now() >= deadline`, capped at `Duration.longestWait` ahead so nothing traps.
    func sleep(until deadline: Duration) async throws
    /// Whether this is the system's continuous clock; asked instead of a dynamic cast (costly at launch).
    var isSystemClock: Bool { get }
}

extension ElapsedClock {
    /// Not the system's clock, unless the clock says so.
    var isSystemClock: Bool { false }

    /// `deadline`, capped at `now() + Duration.longestWait` (a clock traps on out-of-range instants).
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

/// The system's continuous clock, sparing launch the generic adapter's conformance lookup.
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
