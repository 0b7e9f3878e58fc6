import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting

/// The app's own pieces are called outside the provider's locks: one that calls back into the
/// provider from `stop()` neither deadlocks nor stalls it.
@Suite("Provider and the app's own pieces")
struct ProviderCallOutTests {
    /// A reachability whose `stop()` calls back into the provider it serves.
    final class ReentrantReachability: Reachability {
        let provider = Locked<FeatureFlagProvider?>(nil)
        let stopped = Locked(false)
        var isReachable: Bool { true }
        func updates() -> AsyncStream<Bool> { AsyncStream { $0.yield(true); $0.finish() } }
        func stop() {
            guard let provider = provider.withLock({ $0 }) else { return }
            provider.identify(auraBusiness)     // takes the provider's locks
            _ = provider.status
            stopped.withLock { $0 = true }
        }
    }

    @Test func aReachabilityThatCallsBackFromStopDoesNotDeadlock() throws {
        let dir = TempDir()
        let reachability = ReentrantReachability()
        let provider = FeatureFlagProvider(
            context: auraPersonal, fetcher: FlagFetcher(endpoint: .json(post: URL(string: "http://127.0.0.1:9/flags")!)),
            store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), reachability: reachability, lifecycle: ManualLifecycle())
        reachability.provider.withLock { $0 = provider }
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            provider.shutdown()
            done.signal()
        }
        #expect(done.wait(timeout: .now() + 5) == .success, "shutdown deadlocked on a re-entrant stop()")
        #expect(reachability.stopped.withLock { $0 })
        reachability.provider.withLock { $0 = nil }
    }
}
