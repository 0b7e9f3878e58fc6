import Foundation

/// Exponential backoff with full jitter: after failure `n`, wait a random time in `0...min(maximum, initial × multiplier^n)`.
struct Backoff: Sendable, Equatable {
    /// The ceiling after the first failure.
    var initial: Duration
    /// How much the ceiling grows per failure.
    var multiplier: Double
    /// The largest ceiling — normally the poll interval.
    var maximum: Duration

    /// A backoff; `multiplier` is at least 1.
    init(initial: Duration = .seconds(1), multiplier: Double = 2, maximum: Duration = .seconds(300)) {
        self.initial = initial
        self.multiplier = max(1, multiplier)
        self.maximum = maximum
    }

    /// The ceiling after `failures` consecutive failures (1 = the first failure).
    func ceiling(afterFailures failures: Int) -> Duration {
        let steps = max(0, failures - 1)
        let factor = Foundation.pow(multiplier, Double(min(steps, 64)))
        // Bounded (a negative or enormous configured duration), so no conversion can trap.
        return .boundedWait(seconds: min(maximum.boundedWait.seconds, initial.boundedWait.seconds * factor))
    }

    /// A random delay in `0...ceiling(afterFailures:)`.
    func delay(afterFailures failures: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        let ceiling = ceiling(afterFailures: failures).seconds
        return .boundedWait(seconds: Double.random(in: 0...ceiling, using: &generator))
    }
}

/// Any random number generator, as a concrete generator a value can hold.
struct JitterSource: RandomNumberGenerator, Sendable {
    private var generator: any RandomNumberGenerator & Sendable
    init(_ generator: any RandomNumberGenerator & Sendable) { self.generator = generator }
    mutating func next() -> UInt64 { generator.next() }
}
