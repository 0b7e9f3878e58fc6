import FlagServer
import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting

/// `LastKnownGoodStore.inMemory()`: OFREP ADR-0009's `disabled` cache mode — snapshots for this
/// process only, nothing read or written.
@Suite("In-memory store")
struct InMemoryStoreTests {
    @Test func itKeepsSnapshotsForTheProcessAndWritesNothing() throws {
        let store = LastKnownGoodStore.inMemory(capacity: 2)
        #expect(!store.persists && store.loadOutcome == .noFile && store.loadWarning == nil)
        let contexts = (0..<3).map { EvaluationContext(targetingKey: "user-\($0)") }
        for (n, context) in contexts.enumerated() {
            try store.save(snapshot(["n": .int(n)]), etag: EntityTag("\"\(n)\"", endpoint: "0/json"), for: context)
        }
        #expect(store.fingerprints == [contexts[2], contexts[1]].map(\.fingerprint), "the least recently used is evicted")
        #expect(store.lastKnownGood(for: contexts[2])?.snapshot.flags["n"]?.value == 2)
        #expect(store.lastKnownGood(for: contexts[2])?.etag == EntityTag("\"2\"", endpoint: "0/json"))
        try store.setKillHold(KillHold(since: Date(timeIntervalSince1970: 1_750_000_000), context: contexts[2].fingerprint))
        #expect(store.killHold != nil)
        // Setting a snapshot aside keeps no copy: there is no file to copy.
        #expect(store.setAside(contexts[2]) == nil)
        #expect(store.lastKnownGood(for: contexts[2]) == nil)
        try store.removeAll()
        #expect(store.fingerprints.isEmpty)
        #expect(store.fileWriteCount == 0)
        // Another store starts empty: nothing outlives the store that kept it.
        #expect(LastKnownGoodStore.inMemory().fingerprints.isEmpty)
    }

    @Test func aProviderServesWhatItFetchedAndTheNextLaunchStartsFromDefaults() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let context = EvaluationContext(targetingKey: "u1", attributes: ["venue": "venue-42"])
        let seen = Locked<[FlagEvent]>([])
        var configuration = FeatureFlagProvider.Configuration()
        configuration.changeStreams = false
        configuration.crashLoopGuard = CrashLoopGuard(launchesBeforeSafeMode: 2)
        configuration.eventHandler = { event in seen.withLock { $0.append(event) } }
        let key = FlagKey("new_checkout", default: false)
        func launch(_ store: LastKnownGoodStore) -> FeatureFlagProvider {
            FeatureFlagProvider(
                context: context, fetcher: FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: .loopback), store: store,
                configuration: configuration, reachability: ManualReachability(true), lifecycle: ManualLifecycle(foreground: true))
        }
        let store = LastKnownGoodStore.inMemory()
        let provider = launch(store)
        defer { provider.shutdown() }
        // The crash-loop guard keeps a journal on disk: it is off, and an event says why.
        #expect(provider.configuration.crashLoopGuard == nil)
        #expect(await provider.refresh().isSuccess)
        #expect(provider.value(key) == true, "the venue-42 pilot's value")
        #expect(store.lastKnownGood(for: context) != nil, "kept in memory")
        provider.waitForWrites()
        #expect(store.fileWriteCount == 0)
        provider.waitForEventHandler()
        #expect(seen.withLock { $0 }.contains { $0.kind == .fallbackWarning && ($0.message ?? "").contains("crash-loop guard is off") })
        // The next launch has a store of its own, empty: code defaults until it fetches.
        let relaunched = launch(.inMemory())
        defer { relaunched.shutdown() }
        #expect(relaunched.details(key).source == .codeDefault)
        #expect(relaunched.value(key) == false)
    }
}
