#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
public import Foundation

/// The default wall clock: on Linux the cheap coarse real-time clock (millisecond resolution),
/// elsewhere `Date()`. It is read on every `details(_:)` call, for ages and TTL checks.
@usableFromInline
@Sendable package func coarseWallClockNow() -> Date {
    #if canImport(Glibc) || canImport(Musl)
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME_COARSE, &spec)
    // A multiplication, not a division by 10⁹: the division's latency was half of this call.
    return Date(timeIntervalSince1970: Double(spec.tv_sec) + Double(spec.tv_nsec) * 1e-9)
    #else
    return Date()
    #endif
}
