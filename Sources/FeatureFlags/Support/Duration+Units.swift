extension Duration {
    /// The longest wait a library timer takes, 2³² s (~136 years); durations are cut to it so clock arithmetic never traps.
    package static let longestWait = Duration.seconds(Int64(1) << 32)

    /// This duration cut into `0...longestWait`.
    package var boundedWait: Duration { min(max(self, .zero), .longestWait) }

    /// `seconds` as a wait in `0...longestWait` (NaN, negatives: zero); never traps, unlike `Duration.seconds(_:)`.
    package static func boundedWait(seconds: Double) -> Duration {
        guard seconds > 0 else { return .zero }  // also NaN
        guard seconds < Double(Int64(1) << 32) else { return .longestWait }
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }

    /// Whole milliseconds, rounded down; clamped to `Int64` for durations beyond it.
    package var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        if overflow { return seconds < 0 ? .min : .max }
        return product.addingReportingOverflow(attoseconds / 1_000_000_000_000_000).partialValue
    }

    /// Whole milliseconds, rounded down, as a `poll(2)` timeout (clamped to `Int32`).
    package var pollMilliseconds: Int32 { Int32(clamping: milliseconds) }

    /// The duration in seconds as a `Double`.
    package var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Whole nanoseconds, clamped to `Int64`.
    var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? (seconds < 0 ? .min : .max) : product.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}

extension Double {
    /// The nearest whole number (halves away from zero), clamped to `Int`; NaN is 0. Never traps.
    package var roundedClampedToInt: Int {
        guard !isNaN else { return 0 }
        let whole = rounded()
        if whole >= 0x1p63 { return .max }
        if whole < -0x1p63 { return .min }
        return Int(whole)
    }
}
