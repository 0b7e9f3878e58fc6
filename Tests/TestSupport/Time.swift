package import Foundation
import FeatureFlags

/// A wall-clock date tests move by hand.
package final class ManualDate: Sendable {
    private let current: Locked<Date>
    package init(_ start: Date = Date(timeIntervalSince1970: 1_750_000_000)) { current = Locked(start) }
    package var now: Date { current.withLock { $0 } }
    package func advance(_ seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
    package var function: @Sendable () -> Date { { self.now } }
}

/// Wall-clock allowances for the few tests that measure real time (deadlines over loopback).
/// Under ThreadSanitizer everything runs several times slower, so the allowances grow —
/// detected from the sanitizer's runtime being linked in, so that a plain
/// `swift test --sanitize=thread` passes without extra settings.
package enum TestTiming {
    package static let scale: Int64 = {
        if let value = ProcessInfo.processInfo.environment["FEATUREFLAGS_TEST_TIME_SCALE"], let scale = Int64(value), scale > 0 {
            return scale
        }
        return underThreadSanitizer ? 10 : 1
    }()

    /// Whether ThreadSanitizer's runtime is linked in (its shadow memory also makes resident
    /// memory figures meaningless).
    package static let underThreadSanitizer = dlsym(dlopen(nil, RTLD_NOW), "__tsan_init") != nil

    /// `duration` stretched for the current build.
    package static func scaled(_ duration: Duration) -> Duration { duration * Int(scale) }

    /// The budget of loopback fetches in tests that are not about time: generous, so that a
    /// loaded machine cannot turn a success into a timeout. The first seconds of a parallel
    /// `swift test` start 900 tests on two cores, and the CPU-bound ones hold both of the
    /// global executor's threads: trivial tests take 10 s to finish then, and a fresh-clone CI
    /// run saw seven fetches started in those seconds run out of a 10 s budget. A real hang
    /// still fails, at this bound (the same as ``eventualityBound``).
    package static var loopbackBudget: Duration { scaled(.seconds(30)) }

    /// How long `eventually` waits by default before calling a condition false. Nothing waits
    /// this long when the code works; it is the bound that keeps a broken test from hanging. The
    /// first seconds of a parallel `swift test` start 685 tests on two cores at once, and a
    /// fresh-clone CI run once saw two fixtures get no first request within 5 s: the bound is
    /// well beyond such a stall.
    package static var eventualityBound: Duration { scaled(.seconds(30)) }

    /// The same bound as a Dispatch deadline from now, for tests that wait on a semaphore for
    /// another thread: a fixed few seconds is what a starved thread can miss.
    package static var waitDeadline: DispatchTime {
        .now() + .seconds(Int(eventualityBound.components.seconds))
    }
}

/// Waits (bounded) until `condition` holds; false if it never does. It re-checks every
/// millisecond from a Dispatch timer rather than spinning with `Task.yield()`: a spinning
/// test occupies one of the global executor's two threads and delays every other test's
/// timers. Nothing here measures time; the bound only keeps a broken test from hanging.
///
/// The bound counts the time this test got to run, not the wall clock: a check that comes
/// late (both of the global executor's threads held by CPU-bound tests, as in the first
/// seconds of a parallel `swift test` — a CI run once saw 31 s of that) counts 50 ms, so a
/// stall of the whole process is not the condition's failure.
package func eventually(
    isolation: isolated (any Actor)? = #isolation, within limit: Duration = TestTiming.eventualityBound, _ condition: () -> Bool
) async -> Bool {
    let clock = ContinuousClock()
    var counted = Duration.zero
    var last = clock.now
    while !condition() {
        if counted > limit { return false }
        await pause()
        let now = clock.now
        counted += min(now - last, .milliseconds(50))
        last = now
    }
    return true
}

/// Lets a millisecond pass without holding an executor thread.
package func pause() async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(1)) { continuation.resume() }
    }
}
