import Foundation

/// Connections accepted, counted per whole second of the server's running time, keeping only
/// the current second and the busiest so far: constant memory however long the server runs.
struct AcceptRate {
    private let started = ContinuousClock.now
    private var second = 0
    private var inSecond = 0
    private(set) var total = 0
    private(set) var peak = 0

    mutating func count(at now: ContinuousClock.Instant) {
        let current = Int((now - started).components.seconds)
        if current != second {
            second = current
            inSecond = 0
        }
        inSecond += 1
        total += 1
        peak = max(peak, inSecond)
    }
}
