import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting
import FlagServer

/// A launch against a service that has not changed costs one conditional request and its 304:
/// no decode, no write. The change streams the last full answer advertised are kept with its
/// snapshot, so the launch fetch need not be unconditional to learn them, and a 304 still opens
/// them. A 200 that repeats what is stored does not rewrite the file either.
@Suite("Conditional launch", .hangLimit())
struct ConditionalLaunchTests {
    static func configuration(streams: Bool = true) -> FeatureFlagProvider.Configuration {
        var configuration = FeatureFlagProvider.Configuration()
        configuration.streamBackoff = Backoff(initial: .milliseconds(20), maximum: .milliseconds(100))
        configuration.changeStreams = streams
        return configuration
    }

    /// A first launch that fetched (200) and stored its answer, ended; its server keeps running.
    static func firstLaunch(_ dir: TempDir, server: FlagServer) async throws {
        let first = try ProviderFixture(server: server, dir: dir, configuration: configuration(), streams: true)
        let loop = await ProviderStreamTests.start(first)
        loop.cancel()
        first.provider.shutdown()
        // Its stream gone from the server too: later counts are the next launch's alone.
        #expect(await eventually { server.streamCount == 0 })
        // The write of the first answer is done before the fetch completes.
        #expect(first.store.lastKnownGood(for: auraPersonal)?.streams?.isEmpty == false)
    }

    @Test func aLaunchWithAnUnchangedServiceIsOneConditionalRequestNoDecodeNoWrite() async throws {
        let dir = TempDir()
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        try await Self.firstLaunch(dir, server: server)
        let stamp = try #require(FileStamp(path: dir.url("flags.lkg").path))
        let before = server.requests.count

        let f = try ProviderFixture(server: server, dir: dir, configuration: Self.configuration(), streams: true)
        defer { f.provider.shutdown() }
        let loop = await ProviderStreamTests.start(f)
        defer { loop.cancel() }
        let launch = server.requests.dropFirst(before).filter { $0.route != "GET /events" }
        #expect(launch.count == 1, "\(launch.map { "\($0.route) \($0.status.map(String.init) ?? "-")" })")
        #expect(launch.first?.ifNoneMatch != nil, "the launch fetch is conditional")
        #expect(launch.first?.status == 304)
        #expect(f.endpoint.decodeCount == 0, "a 304 decodes nothing")
        #expect(f.provider.openStreamCount == 1, "the stored streams are opened after a 304")
        #expect(f.provider.status == .ready)
        #expect(FileStamp(path: dir.url("flags.lkg").path) == stamp, "the fallback file was rewritten")
    }

    @Test func aStoredStreamTheServiceRefusesSendsForItsCurrentStreams() async throws {
        let dir = TempDir()
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        try await Self.firstLaunch(dir, server: server)
        // The stored link now leads nowhere: rewrite it to a path the server answers 404.
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        let stored = try #require(store.lastKnownGood(for: auraPersonal))
        let gone = try #require(URL(string: server.flagsURL.absoluteString.replacingOccurrences(of: "/flags", with: "/expired-stream")))
        try store.save(StoredFlags(snapshot: stored.snapshot, etag: stored.etag, streams: [EventStreamLink(url: gone)]), for: auraPersonal)

        let before = server.requests.count
        let f = try ProviderFixture(server: server, dir: dir, configuration: Self.configuration(), streams: true)
        defer { f.provider.shutdown() }
        let loop = f.run()
        defer { loop.cancel() }
        // Refused → an unconditional fetch → the service's current stream, opened.
        #expect(await eventually { f.provider.recentEvents.contains { $0.kind == .streamClosed } })
        #expect(await eventually { f.provider.openStreamCount == 1 && f.server.streamCount == 1 && !f.provider.isFetching })
        let fetches = server.requests.dropFirst(before).filter { $0.route != "GET /events" }
        #expect(fetches.contains { $0.ifNoneMatch == nil && $0.status == 200 }, "no unconditional fetch after the refusal")
        #expect(await eventually { f.store.lastKnownGood(for: auraPersonal)?.streams?.first?.url.path == "/events" })
    }

    @Test func aLaunchWithoutStoredStreamsAsksUnconditionally() async throws {
        let dir = TempDir()
        // Stored by a version that kept no streams: the launch must learn them from a full answer.
        try seedFallback(dir, auraLinkPersonal, etag: EntityTag("\"old\"", endpoint: "0/json"))
        let f = try ProviderFixture(dir: dir, configuration: Self.configuration(), streams: true)
        defer { f.stop() }
        let loop = await ProviderStreamTests.start(f)
        defer { loop.cancel() }
        let first = try #require(f.server.requests.first { $0.route != "GET /events" })
        #expect(first.ifNoneMatch == nil && first.status == 200)
        #expect(f.provider.openStreamCount == 1)
    }

    /// `keepsStreamURLs = false` (OFREP ADR-0008's rule): no stream URL reaches the file; a
    /// launch after an answer that advertised streams fetches in full to learn them, then once
    /// more, conditionally, when the stream opens; the file is not rewritten for the same answer.
    @Test func withoutKeptStreamURLsNoURLReachesTheFileAndALaunchFetchesInFull() async throws {
        let dir = TempDir()
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        var configuration = Self.configuration()
        configuration.keepsStreamURLs = false
        let first = try ProviderFixture(server: server, dir: dir, configuration: configuration, streams: true)
        let firstLoop = await ProviderStreamTests.start(first)
        firstLoop.cancel()
        first.provider.shutdown()
        #expect(await eventually { server.streamCount == 0 })
        let file = try Data(contentsOf: dir.url("flags.lkg"))
        #expect(file.range(of: Data("/events".utf8)) == nil, "a stream URL was written to the fallback file")
        let stored = LastKnownGoodStore(fileURL: dir.url("flags.lkg")).lastKnownGood(for: auraPersonal)
        #expect(stored != nil && stored?.streams == nil, "advertised streams are kept as not known")
        let stamp = try #require(FileStamp(path: dir.url("flags.lkg").path))

        let before = server.requests.count
        let f = try ProviderFixture(server: server, dir: dir, configuration: configuration, streams: true)
        defer { f.provider.shutdown() }
        let loop = await ProviderStreamTests.start(f)
        defer { loop.cancel() }
        let fetches = { server.requests.dropFirst(before).filter { $0.route != "GET /events" } }
        #expect(await eventually { fetches().map(\.status) == [200, 304] }, "\(fetches().map { "\($0.route) \($0.status.map(String.init) ?? "-")" })")
        let launch = fetches()
        #expect(launch.first?.ifNoneMatch == nil, "the launch fetch is unconditional")
        #expect(f.provider.openStreamCount == 1)
        #expect(FileStamp(path: dir.url("flags.lkg").path) == stamp, "the same answer rewrote the file")
    }

    /// URLs an earlier launch kept are not used without `keepsStreamURLs`, and the next full
    /// answer rewrites the entry without them.
    @Test func keptStreamURLsAreDroppedWhenTheAppStopsKeepingThem() async throws {
        let dir = TempDir()
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        try await Self.firstLaunch(dir, server: server)
        #expect(try Data(contentsOf: dir.url("flags.lkg")).range(of: Data("/events".utf8)) != nil, "kept by default")
        var configuration = Self.configuration()
        configuration.keepsStreamURLs = false
        let before = server.requests.count
        let f = try ProviderFixture(server: server, dir: dir, configuration: configuration, streams: true)
        defer { f.provider.shutdown() }
        let loop = await ProviderStreamTests.start(f)
        defer { loop.cancel() }
        let launch = server.requests.dropFirst(before).filter { $0.route != "GET /events" }
        #expect(launch.first?.ifNoneMatch == nil && launch.first?.status == 200, "the kept streams were used")
        #expect(await eventually { (try? Data(contentsOf: dir.url("flags.lkg")))?.range(of: Data("/events".utf8)) == nil })
    }

    @Test func aStreamLinkIsTrustedWithCredentialsOnlyOnTheFetchersOwnOrigin() throws {
        let fetcher = FlagFetcher(endpoint: .json(post: URL(string: "https://flags.example.com/flags")!))
        let links = [
            EventStreamLink(url: URL(string: "https://flags.example.com/events?token=1")!, inactivityDelay: .seconds(5), endpoint: "0/json", sameOrigin: false),
            EventStreamLink(url: URL(string: "https://elsewhere.example.net/events")!, inactivityDelay: .seconds(5), endpoint: nil, sameOrigin: true),
        ]
        let restored = fetcher.restoring(links, for: auraPersonal)
        #expect(restored.map(\.sameOrigin) == [true, false], "the file's own same-origin bit is not trusted")
        #expect(restored.map(\.url) == links.map(\.url) && restored.map(\.endpoint) == links.map(\.endpoint))
    }

    @Test func aTwoHundredThatRepeatsWhatIsStoredRewritesNothing() async throws {
        let dir = TempDir()
        let f = try ProviderFixture(dir: dir, transport: ETagStrippingTransport())
        defer { f.stop() }
        guard case .updated = await f.provider.refresh() else {
            Issue.record("the first fetch did not update")
            return
        }
        let stamp = try #require(FileStamp(path: f.fallbackURL.path))
        // No ETag, so every poll is a full 200 with the same content.
        var outcomes: [FetchOutcome] = []
        for _ in 0..<3 { outcomes.append(await f.provider.refresh()) }
        #expect(outcomes == [.unchanged, .unchanged, .unchanged])
        #expect(f.endpoint.decodeCount == 4)
        #expect(FileStamp(path: f.fallbackURL.path) == stamp, "a 200 with the stored content rewrote the file")
        // A different answer is written.
        var changed = ServerDocument.seedExample
        changed.base.flags["new_checkout"] = FlagEntry(value: true)
        changed.base.version = "changed"
        f.server.document = changed
        _ = await f.provider.refresh()
        #expect(FileStamp(path: f.fallbackURL.path) != stamp)
        #expect(LastKnownGoodStore(fileURL: f.fallbackURL).lastKnownGood(for: auraPersonal)?.snapshot.version == "changed")
    }

    @Test func streamLinksSurviveTheFileRoundTrip() throws {
        let dir = TempDir()
        let links = [
            EventStreamLink(url: URL(string: "https://flags.example.com/events?token=abc")!, inactivityDelay: .seconds(90), endpoint: "0/ofrep", sameOrigin: true),
            EventStreamLink(url: URL(string: "http://127.0.0.1:8080/events")!, inactivityDelay: .milliseconds(1500), endpoint: nil, sameOrigin: false),
        ]
        let snapshot = FlagSnapshot(values: ["a": true], version: "v", fetchedAt: Date(timeIntervalSince1970: 1_750_000_000), ttl: 60)
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        try store.save(StoredFlags(snapshot: snapshot, etag: EntityTag("\"t\"", endpoint: "0/ofrep"), streams: links), for: auraPersonal)
        try store.save(StoredFlags(snapshot: snapshot, etag: nil, streams: []), for: auraBusiness)
        try store.save(snapshot, etag: nil, for: EvaluationContext(targetingKey: "user-2", attributes: [:]))
        let reloaded = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        #expect(reloaded.lastKnownGood(for: auraPersonal)?.streams == links)
        #expect(reloaded.lastKnownGood(for: auraBusiness)?.streams == [])
        #expect(reloaded.lastKnownGood(for: EvaluationContext(targetingKey: "user-2", attributes: [:]))?.streams == nil)
    }

    @Test func moreStreamLinksThanTheFileReadsAreCutAtTheWriteNotLostWithTheSnapshot() throws {
        // Each answer keeps at most eight, but several endpoints' answers are combined: a write
        // of more links than a read accepts would make the whole entry unreadable at the next launch.
        let dir = TempDir()
        let links = (0..<100).map { EventStreamLink(url: URL(string: "https://push.example.com/s\($0)")!) }
        let snapshot = FlagSnapshot(values: ["a": true], version: "v", fetchedAt: Date(timeIntervalSince1970: 1_750_000_000))
        try LastKnownGoodStore(fileURL: dir.url("flags.lkg")).save(StoredFlags(snapshot: snapshot, etag: nil, streams: links), for: auraPersonal)
        let reloaded = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        #expect(reloaded.lastKnownGood(for: auraPersonal)?.snapshot["a"]?.value == true)
        #expect(reloaded.lastKnownGood(for: auraPersonal)?.streams == Array(links.prefix(SnapshotCodec.maxStoredStreams)))
    }

    @Test func aStoredStreamLinkThatIsNoHTTPURLMakesItsEntryUnreadable() throws {
        // Only an edited or damaged file holds one (answers keep http(s) links only): the entry
        // is dropped as any entry that does not decode, and the launch starts from nothing.
        let dir = TempDir()
        let snapshot = FlagSnapshot(values: ["a": true], version: "v", fetchedAt: Date(timeIntervalSince1970: 1_750_000_000))
        let odd = EventStreamLink(url: URL(string: "ftp://flags.example.com/events")!)
        try LastKnownGoodStore(fileURL: dir.url("flags.lkg")).save(StoredFlags(snapshot: snapshot, etag: nil, streams: [odd]), for: auraPersonal)
        let reloaded = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        guard case .unreadable(let error)? = reloaded.lookup(auraPersonal.fingerprint) else {
            Issue.record("the entry was read")
            return
        }
        #expect(error.message == "malformed stream link")
        #expect(reloaded.lastKnownGood(for: auraPersonal) == nil)
    }
}
