import Foundation
import Testing
import FlagServer
import TestSupport
@testable import FeatureFlags

/// A write never leaves a file the next launch refuses: a read takes at most 1,024 entries and
/// 64 MiB, and a refused file loses every context in it, not only the one that overflowed it.
@Suite("Fallback file limits")
struct StoreLimitTests {
    func snapshot(_ text: String) -> FlagSnapshot {
        FlagSnapshot(values: ["t": .string(text)], version: "v", fetchedAt: Date(timeIntervalSince1970: 1_750_000_000))
    }

    @Test func aCapacityBeyondWhatAFileHoldsIsCutToIt() throws {
        #expect(LastKnownGoodStore(fileURL: TempDir().url("f"), capacity: 5_000).capacity == 1_022)
        #expect(LastKnownGoodStore(fileURL: TempDir().url("f"), capacity: -3).capacity == 1)
        // 1,100 contexts through a content of capacity 5,000: the file still reads, newest first.
        var content = StoreContent(path: "/nonexistent/f", capacity: 5_000)
        let stored = StoredFlags(snapshot: snapshot("x"), etag: nil)
        let payload = SnapshotCodec.encode(stored)
        for n in 0..<1_100 { content.put(payload: payload, stored: stored, for: "c\(n)") }
        content.killHold = KillHold(since: Date(timeIntervalSince1970: 1_750_000_000), context: "c1")
        let entries = try FallbackFileFormat.decode(FallbackFileFormat.encode(content.fileEntries))
        #expect(entries.count == 1_023, "1,022 contexts and the kill hold")
        #expect(entries.first?.fingerprint == "c1099" && entries[1_021].fingerprint == "c78")
    }

    @Test func theEncodedSizeIsWhatTheEncodingTakes() {
        for name in ["", "a", String(repeating: "n", count: 127), String(repeating: "n", count: 128), String(repeating: "é", count: 9_000)] {
            for payload in [[], [UInt8](repeating: 7, count: 300)] {
                let entries = [FallbackFileFormat.Entry(fingerprint: name, payload: ArraySlice(payload))]
                #expect(FallbackFileFormat.encodedSize(entries) == FallbackFileFormat.encode(entries).count)
            }
        }
        #expect(FallbackFileFormat.encodedSize([]) == FallbackFileFormat.encode([]).count)
    }

    /// The store as a launch reads it with `limit` in place of 64 MiB.
    func reader(limit: Int) -> (String) throws(FileIOError) -> [UInt8] {
        { path throws(FileIOError) in
            let bytes = try FileIO.read(path)
            guard bytes.count <= limit else { throw .tooLarge(bytes.count) }
            return bytes
        }
    }

    /// The largest file in the tests below, in place of 64 MiB.
    static let limit = 20_000

    /// A store at `url` that writes and reads files of at most ``limit`` bytes.
    func limitedStore(_ url: URL) -> LastKnownGoodStore {
        LastKnownGoodStore(fileURL: url, capacity: 10, read: reader(limit: Self.limit), fileLimit: Self.limit)
    }

    @Test func contextsThatWouldOverflowTheFileAreEvictedOldestFirst() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("flags.lkg")
            let store = limitedStore(url)
            let contexts = (0..<5).map { EvaluationContext(targetingKey: "user-\($0)") }
            for (n, context) in contexts.enumerated() {
                try store.save(snapshot(String(repeating: "\(n)", count: 6_000)), etag: nil, for: context)
            }
            // Three 6 KB snapshots fit in 20,000 bytes, four do not.
            #expect(store.fingerprints == contexts.suffix(3).reversed().map(\.fingerprint))
            let size = try Data(contentsOf: url).count
            #expect(size <= Self.limit)
            let relaunched = limitedStore(url)
            #expect(relaunched.loadOutcome == .loaded(contexts: 3, bytes: size))
            #expect(relaunched.lastKnownGood(for: contexts[4])?.snapshot.flags["t"]?.value == .string(String(repeating: "4", count: 6_000)))
            #expect(relaunched.lastKnownGood(for: contexts[1]) == nil)
        }
    }

    @Test func aSnapshotTooLargeForAnyFileIsNotWrittenAndTheFileKeepsTheRest() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("flags.lkg")
            let store = limitedStore(url)
            let small = EvaluationContext(targetingKey: "small")
            let large = EvaluationContext(targetingKey: "large")
            try store.save(snapshot("kept"), etag: nil, for: small)
            let before = try Data(contentsOf: url)
            #expect(throws: FlagError.self) { try store.save(snapshot(String(repeating: "x", count: 30_000)), etag: nil, for: large) }
            #expect(try Data(contentsOf: url) == before, "the file is as it was")
            let relaunched = limitedStore(url)
            #expect(relaunched.lastKnownGood(for: small)?.snapshot.flags["t"]?.value == "kept")
            #expect(relaunched.lastKnownGood(for: large) == nil)
        }
    }

    @Test func aProviderWhoseAnswerIsTooLargeToStoreServesItAndSaysWhy() async throws {
        let dir = TempDir()
        let server = try FlagServer(document: CrashLoopGuardTests.document(["big": .string(String(repeating: "x", count: 30_000))]))
        defer { server.stop() }
        let events = Locked<[FlagEvent]>([])
        let store = limitedStore(dir.url("flags.lkg"))
        let client = FeatureFlagProvider(
            context: EvaluationContext(targetingKey: "u"),
            fetcher: FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: .loopback),
            store: store,
            configuration: .init(eventHandler: { event in events.withLock { $0.append(event) } }, changeStreams: false),
            reachability: AlwaysReachable(), lifecycle: AlwaysForeground())
        defer { client.shutdown() }
        #expect(await client.refresh().isSuccess)
        client.waitForWrites()
        client.waitForEventHandler()
        #expect(client.status == .ready && client.snapshot.flags["big"]?.value == .string(String(repeating: "x", count: 30_000)))
        let failure = events.withLock { $0 }.first { $0.kind == .fallbackWriteFailed }
        #expect(failure?.message?.contains("more than the 20000 a launch reads") == true, "\(String(describing: failure))")
        #expect(!FileManager.default.fileExists(atPath: dir.url("flags.lkg").path))
    }
}
