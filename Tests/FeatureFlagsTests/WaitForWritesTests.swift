import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FlagServer

/// `waitForWrites()`, the tools' way to exit without losing what they were served: a fetch's
/// answer is served a moment before its write is queued, and a value seen is a value waited for.
@Suite("Waiting for writes")
struct WaitForWritesTests {
    /// After every change the event handler sees, `waitForWrites()` returns only once the store
    /// holds the values served: the handler runs on its own queue while the fetch's task is
    /// between serving the answer and queueing its write (before the fix, 6 to 12 of the 30
    /// changes found the store behind, in each of 5 runs).
    @Test func aValueSeenIsAValueWaitedFor() async throws {
        let dir = TempDir()
        let server = try FlagServer(document: CrashLoopGuardTests.document(["n": .int(0)]))
        defer { server.stop() }
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        let provider = Locked<FeatureFlagProvider?>(nil)
        let behind = Locked<[String]>([])
        let seen = Locked(0)
        var configuration = FeatureFlagProvider.Configuration(
            eventHandler: { event in
                guard event.kind == .configurationChanged, let provider = provider.withLock({ $0 }) else { return }
                // What is served now is read before the wait: a later fetch may serve a newer
                // value while the wait returns (its write not yet counted), and the store may
                // then hold a newer one than this — never an older.
                let served = provider.snapshot.flags["n"]?.value?.intValue ?? -1
                provider.waitForWrites()
                let stored = store.lastKnownGood(for: provider.context)?.snapshot.flags["n"]?.value?.intValue ?? -1
                if stored < served { behind.withLock { $0.append("\(served) (stored \(stored))") } }
                seen.withLock { $0 += 1 }
            }, changeStreams: false)
        configuration.killSwitchKey = "kill_switch"
        let client = FeatureFlagProvider(
            context: EvaluationContext(targetingKey: "u"),
            fetcher: FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: .init(budget: TestTiming.loopbackBudget)),
            store: store, configuration: configuration, reachability: AlwaysReachable(), lifecycle: AlwaysForeground())
        defer { client.shutdown() }
        provider.withLock { $0 = client }
        for n in 1...30 {
            server.document = CrashLoopGuardTests.document(["n": .int(n)])
            _ = await client.refresh()
        }
        client.waitForEventHandler()
        #expect(seen.withLock { $0 } >= 30)
        #expect(behind.withLock { $0 } == [], "the store was behind what was served after these changes")
    }

    /// With nothing fetched and nothing written, it returns at once; a failed write (the
    /// store's directory is a file) does not keep it waiting and is reported.
    @Test func aFailedWriteDoesNotKeepItWaiting() async throws {
        let dir = TempDir()
        let server = try FlagServer(document: CrashLoopGuardTests.document(["n": .int(1)]))
        defer { server.stop() }
        try Data("not a directory".utf8).write(to: dir.url("blocked"))
        let events = Locked<[FlagEvent]>([])
        let client = FeatureFlagProvider(
            context: EvaluationContext(targetingKey: "u"),
            fetcher: FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: .init(budget: TestTiming.loopbackBudget)),
            store: LastKnownGoodStore(fileURL: dir.url("blocked/flags.lkg")),
            configuration: .init(eventHandler: { event in events.withLock { $0.append(event) } }, changeStreams: false),
            reachability: AlwaysReachable(), lifecycle: AlwaysForeground())
        defer { client.shutdown() }
        client.waitForWrites()
        _ = await client.refresh()
        client.waitForWrites()
        client.waitForEventHandler()
        #expect(client.snapshot.flags["n"]?.value == .int(1))
        #expect(events.withLock { $0 }.contains { $0.kind == .fallbackWriteFailed })
    }
}
