import Testing
import TestSupport

extension Trait where Self == TimeLimitTrait {
    /// The bound that fails a test which hangs: `minutes` of wall-clock time, stretched by the
    /// build's time scale (ThreadSanitizer: ×10). Nothing passing comes near it; it is no
    /// measure. A fixed minute was not enough: a parallel ThreadSanitizer run on two cores
    /// queues every test behind the CPU-bound ones, and trivial tests there take 55 s from their
    /// start to their end — one more build on the machine pushed seventeen of them past a
    /// minute.
    static func hangLimit(minutes: Int64 = 1) -> Self {
        .timeLimit(.minutes(minutes * max(2, TestTiming.scale)))
    }
}
