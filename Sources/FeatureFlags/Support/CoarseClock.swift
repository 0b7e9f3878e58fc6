#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A monotonic clock, cheap to read with millisecond resolution, for timing hook stages against a 50 ms limit.
struct CoarseElapsedClock: ElapsedClock {
    let start: Duration

    init() { start = Self.reading() }

    func now() -> Duration { Self.reading() - start }

    func sleep(until deadline: Duration) async throws {
        try await ContinuousClock().sleep(for: (boundedDeadline(deadline) - now()).boundedWait)
    }

    private static func reading() -> Duration {
        #if canImport(Darwin)
        return .nanoseconds(Int64(clock_gettime_nsec_np(CLOCK_MONOTONIC_RAW_APPROX)))
        #else
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &spec)
        return .seconds(Int64(spec.tv_sec)) + .nanoseconds(Int64(spec.tv_nsec))
        #endif
    }
}
