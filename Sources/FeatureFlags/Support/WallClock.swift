#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
public import Foundation

/// The wall clock providers and fallback clients read by default: on Linux the kernel's coarse
/// real-time clock (a few nanoseconds to read, a few milliseconds of resolution), elsewhere
/// `Date()`. It stamps ages and TTL checks, measured in seconds, on the path of every
/// `details(_:)` read, where a precise clock read cost more than the lookup itself.
@usableFromInline
@Sendable func coarseWallClockNow() -> Date {
    #if canImport(Glibc) || canImport(Musl)
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME_COARSE, &spec)
    // A multiplication, not a division by 10⁹: the division's latency was half of this call.
    return Date(timeIntervalSince1970: Double(spec.tv_sec) + Double(spec.tv_nsec) * 1e-9)
    #else
    return Date()
    #endif
}
