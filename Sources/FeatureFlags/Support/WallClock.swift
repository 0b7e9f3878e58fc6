#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
public import Foundation

/// The default wall clock, read on every `details(_:)`: Linux's cheap coarse real-time clock, elsewhere `Date()`.
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
