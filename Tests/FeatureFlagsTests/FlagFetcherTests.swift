import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FlagServer

/// The stateless fetcher against a real loopback ``FlagServer``.
@Suite("FlagFetcher over loopback")
struct FlagFetcherTests {
    @Test func fetchThenNotModifiedWithoutDecoding() async throws {
        let (server, fetcher, endpoint) = try makeServerAndFetcher()
        defer { server.stop(); fetcher.shutdown() }
        let first = try #require(fetched(await fetcher.fetch(auraPersonal)))
        #expect(first.snapshot.flags["plan_themeColor"]?.value == "#3498DB")
        #expect(first.snapshot.flags["plan_themeColor"]?.reason == .targetingMatch)
        #expect(first.snapshot.version == "2025-08-04T10:00:00Z")
        #expect(first.snapshot.ttl == 86_400)
        #expect(first.snapshot.contextFingerprint == auraPersonal.fingerprint, "stamped by the fetcher")
        let etag = try #require(first.etag)
        #expect(etag.endpoint == "0/json")
        #expect(endpoint.decodeCount == 1)

        #expect(await fetcher.fetch(auraPersonal, ifNoneMatch: etag) == .notModified)
        #expect(endpoint.decodeCount == 1, "a 304 must not be decoded")
        let log = server.requests
        #expect(log.map(\.status) == [200, 304])
        #expect(log[0].ifNoneMatch == nil)
        #expect(log[1].ifNoneMatch == etag.value)
        #expect(log[1].bytesSent == 0)
        #expect(log[1].contextFingerprint == auraPersonal.fingerprint)
    }

    @Test func theFetcherKeepsNoTags() async throws {
        let (server, fetcher, endpoint) = try makeServerAndFetcher()
        defer { server.stop(); fetcher.shutdown() }
        _ = await fetcher.fetch(auraPersonal)
        // Nothing remembered: without a tag the next fetch is full.
        #expect(snapshot(of: await fetcher.fetch(auraPersonal)) != nil)
        #expect(endpoint.decodeCount == 2)
        #expect(server.requests.map(\.ifNoneMatch) == [nil, nil])
        // A tag the service no longer has gets the full answer.
        #expect(snapshot(of: await fetcher.fetch(auraPersonal, ifNoneMatch: EntityTag("\"stale\"", endpoint: "0/json"))) != nil)
    }

    @Test func aTagGoesOnlyToTheEndpointThatSentIt() async throws {
        let (server, fetcher, _) = try makeServerAndFetcher()
        defer { server.stop(); fetcher.shutdown() }
        let tag = try #require(fetched(await fetcher.fetch(auraPersonal))?.etag)
        // The same tag, as if another endpoint of a chain had sent it: not sent here.
        let foreign = EntityTag(tag.value, endpoint: "1/ofrep")
        #expect(snapshot(of: await fetcher.fetch(auraPersonal, ifNoneMatch: foreign)) != nil)
        #expect(server.requests.last?.ifNoneMatch == nil)
        // A tag read from a file of the first version carries no endpoint: never sent either.
        #expect(snapshot(of: await fetcher.fetch(auraPersonal, ifNoneMatch: EntityTag(tag.value, endpoint: ""))) != nil)
        #expect(server.requests.last?.ifNoneMatch == nil)
    }

    @Test func notModifiedToAnUnconditionalRequestIsAnError() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        server.fault = .status(304, retryAfter: nil)
        let fetcher = FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: .loopback)
        defer { fetcher.shutdown() }
        let error = try #require(await fetchError(fetcher, auraPersonal))
        #expect(error.kind == .decode)
        #expect(error.description.contains("without If-None-Match"))
    }

    @Test func targetingFollowsTheContext() async throws {
        let (server, fetcher, _) = try makeServerAndFetcher()
        defer { server.stop(); fetcher.shutdown() }
        let personal = try #require(fetched(await fetcher.fetch(auraPersonal)))
        let business = try #require(fetched(await fetcher.fetch(auraBusiness)))
        #expect(personal.snapshot.flags["plan_themeColor"]?.value == "#3498DB")
        #expect(business.snapshot.flags["plan_themeColor"]?.value == "#2C3E50")
        #expect(business.snapshot.flags["plan_feature_list"]?.value?.listValue?.contains("team") == true)
        #expect(personal.etag != business.etag)
        #expect(server.requests.map(\.contextFingerprint) == [auraPersonal.fingerprint, auraBusiness.fingerprint])
    }

    @Test func urlTemplateForAStaticHost() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let fetcher = FlagFetcher(endpoint: .json(urlTemplate: server.baseURL.absoluteString + "/flags/{venue}.json"), configuration: .loopback)
        defer { fetcher.shutdown() }
        let pilot = try #require(snapshot(of: await fetcher.fetch(EvaluationContext(targetingKey: "u", venue: "venue-42"))))
        #expect(pilot.flags["new_checkout"]?.value == true)
        let other = try #require(snapshot(of: await fetcher.fetch(EvaluationContext(targetingKey: "u", venue: "venue-7"))))
        #expect(other.flags["new_checkout"]?.value == false)
        // Only this fetcher's requests: the port is an ephemeral one that another test's change
        // stream can reach — seen once, a GET /events from a doc-snippet test whose fallback
        // file was shared between runs and so restored an old run's stream on this port (that
        // test now has a file of its own; the filter keeps this one about its own fetcher).
        let ours = { server.requests.filter { $0.path.hasPrefix("/flags/") } }
        #expect(ours().map(\.path) == ["/flags/venue-42.json", "/flags/venue-7.json"])
        #expect(ours().allSatisfy { $0.method == "GET" })
        // A context without the attribute never reaches the network.
        let missing = await fetchError(fetcher, EvaluationContext(targetingKey: "u"))
        #expect(missing?.errorCode == .invalidContext)
        #expect(ours().count == 2 && server.requests.allSatisfy { $0.path.hasPrefix("/flags/") || $0.path == "/events" })
    }

    @Test func hotReloadOfTheServedFile() async throws {
        let dir = TempDir()
        let file = dir.url("flags.json")
        try Data(ServerDocument.seedExample.jsonBytes()).write(to: file)
        let server = try FlagServer(file: file.path)
        defer { server.stop() }
        let fetcher = FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: .loopback)
        defer { fetcher.shutdown() }
        #expect(snapshot(of: await fetcher.fetch(auraPersonal))?.flags["plan_themeColor"]?.value == "#3498DB")
        var changed = ServerDocument.seedExample
        changed.rules[1].flags["plan_themeColor"] = FlagEntry(value: "#112233")
        // Replaced atomically, as editors save: written in place, a request could catch the
        // file half-written (a reload error, the old document served until the write ends).
        try Data(changed.jsonBytes()).write(to: file, options: .atomic)
        let reloaded = try #require(fetched(await fetcher.fetch(auraPersonal)))
        #expect(reloaded.snapshot.flags["plan_themeColor"]?.value == "#112233")
        #expect(server.reloadCount == 1)
        // A broken edit keeps the last good document.
        try Data("{ not json".utf8).write(to: file, options: .atomic)
        #expect(await fetcher.fetch(auraPersonal, ifNoneMatch: reloaded.etag) == .notModified)
        #expect(server.lastReloadError != nil)
        #expect(server.reloadCount == 1)
    }

    @Test func concurrentFetchesAreIndependentRequests() async throws {
        let (server, fetcher, endpoint) = try makeServerAndFetcher()
        defer { server.stop(); fetcher.shutdown() }
        let results = await withTaskGroup(of: FetchResult.self) { group in
            for _ in 0..<5 { group.addTask { await fetcher.fetch(auraPersonal) } }
            var all: [FetchResult] = []
            for await r in group { all.append(r) }
            return all
        }
        // Sharing one request among callers is the provider's job (one fetch at a time);
        // the fetcher answers each call on its own, identically.
        #expect(results.count == 5)
        #expect(Set(results.compactMap { snapshot(of: $0)?.flags }).count == 1)
        #expect(server.requestCount == 5)
        #expect(endpoint.decodeCount == 5)
    }

    @Test func authHeadersAreSentButNeverShown() async throws {
        let (server, fetcher, _) = try makeServerAndFetcher(headers: ["Authorization": "Bearer top-secret-token"])
        defer { server.stop(); fetcher.shutdown() }
        _ = await fetcher.fetch(auraPersonal)
        #expect(server.requests.first?.headers["authorization"] == "Bearer top-secret-token")
        server.fault = .status(500, retryAfter: nil)
        let error = try #require(await fetchError(fetcher, auraPersonal))
        for text in [error.description, "\(error)", String(reflecting: error)] {
            #expect(!text.contains("top-secret-token"))
            #expect(!text.contains("user-1"))
            #expect(!text.contains("auralink"))
        }
    }

    @Test func refusesPlainHTTPOffLoopbackWithoutTouchingTheNetwork() async throws {
        let fetcher = FlagFetcher(endpoint: .json(post: URL(string: "http://flags.example.com/flags?key=abc")!), configuration: .loopback)
        defer { fetcher.shutdown() }
        let error = await fetchError(fetcher, auraPersonal)
        #expect(error == .insecureURL(host: "flags.example.com"))
        #expect(error?.isFatal == true)
        #expect(error?.description.contains("key=abc") == false)
        // Opting in lets the request go (here to an unroutable test address, so it fails otherwise).
        let optedIn = FlagFetcher(
            endpoint: .json(post: URL(string: "http://192.0.2.1:9/flags")!),
            configuration: .init(budget: .milliseconds(300), allowInsecureHTTP: true))
        defer { optedIn.shutdown() }
        let other = await fetchError(optedIn, auraPersonal)
        #expect(other != nil)
        #expect(other?.kind != .insecureURL)
    }

    @Test func shutdownRefusesLaterFetches() async throws {
        let (server, fetcher, _) = try makeServerAndFetcher()
        defer { server.stop() }
        fetcher.shutdown()
        fetcher.shutdown()
        #expect(await fetchError(fetcher, auraPersonal) == .cancelled)
        #expect(server.requestCount == 0)
    }
}

@Suite("URLSession errors as fetch errors")
struct TransportErrorMappingTests {
    @Test func libcurlsOutOfMemoryIsSaidForWhatItIs() {
        let oversized = NSError(domain: NSURLErrorDomain, code: -1, userInfo: [NSLocalizedDescriptionKey: "Out of memory"])
        let error = URLSessionTransport.map(oversized)
        #expect(error.kind == .transport)
        #expect(error.description.contains("header section is too large"))
        #expect(!error.description.contains("Out of memory"))
        let other = NSError(domain: NSURLErrorDomain, code: -1, userInfo: [NSLocalizedDescriptionKey: "Weird failure for https://h/x?key=secret"])
        #expect(!URLSessionTransport.map(other).description.contains("secret"))
    }
}
