import Foundation
import Testing
@testable import FeatureFlags
import FlagServer

/// The online client against a real loopback ``FlagServer``.
@Suite("OnlineClient over loopback")
struct OnlineClientTests {
    @Test func fetchThenNotModifiedWithoutDecoding() async throws {
        let (server, client, endpoint) = try makeServerAndClient()
        defer { server.stop(); client.shutdown() }
        let first = try #require(snapshot(of: try await client.fetch(for: auraPersonal)))
        #expect(first.flags["plan_themeColor"]?.value == "#3498DB")
        #expect(first.flags["plan_themeColor"]?.reason == .targetingMatch)
        #expect(first.version == "2025-08-04T10:00:00Z")
        #expect(first.ttl == 86_400)
        #expect(first.origin == .network)
        let etag = try #require(first.etag)
        #expect(client.etag(for: auraPersonal) == etag)
        #expect(endpoint.decodeCount == 1)

        #expect(try await client.fetch(for: auraPersonal) == .notModified)
        #expect(endpoint.decodeCount == 1, "a 304 must not be decoded")
        let log = server.requests
        #expect(log.map(\.status) == [200, 304])
        #expect(log[0].ifNoneMatch == nil)
        #expect(log[1].ifNoneMatch == etag)
        #expect(log[1].bytesSent == 0)
        #expect(log[1].contextFingerprint == auraPersonal.fingerprint)
    }

    @Test func forgettingTheETagForcesAFullFetch() async throws {
        let (server, client, endpoint) = try makeServerAndClient()
        defer { server.stop(); client.shutdown() }
        _ = try await client.fetch(for: auraPersonal)
        client.setETag(nil, for: auraPersonal)
        #expect(snapshot(of: try await client.fetch(for: auraPersonal)) != nil)
        #expect(endpoint.decodeCount == 2)
        client.setETag("\"stale\"", for: auraPersonal)
        #expect(snapshot(of: try await client.fetch(for: auraPersonal)) != nil)
    }

    @Test func targetingFollowsTheContext() async throws {
        let (server, client, _) = try makeServerAndClient()
        defer { server.stop(); client.shutdown() }
        let personal = try #require(snapshot(of: try await client.fetch(for: auraPersonal)))
        let business = try #require(snapshot(of: try await client.fetch(for: auraBusiness)))
        #expect(personal.flags["plan_themeColor"]?.value == "#3498DB")
        #expect(business.flags["plan_themeColor"]?.value == "#2C3E50")
        #expect(business.flags["plan_feature_list"]?.value?.listValue?.contains("team") == true)
        // ETags are kept per context.
        #expect(client.etag(for: auraPersonal) != client.etag(for: auraBusiness))
        #expect(server.requests.map(\.contextFingerprint) == [auraPersonal.fingerprint, auraBusiness.fingerprint])
    }

    @Test func urlTemplateForAStaticHost() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let client = OnlineClient(endpoint: JSONFlagEndpoint(urlTemplate: server.baseURL.absoluteString + "/flags/{venue}.json"))
        defer { client.shutdown() }
        let pilot = try #require(snapshot(of: try await client.fetch(for: EvaluationContext(targetingKey: "u", venue: "venue-42"))))
        #expect(pilot.flags["new_checkout"]?.value == true)
        let other = try #require(snapshot(of: try await client.fetch(for: EvaluationContext(targetingKey: "u", venue: "venue-7"))))
        #expect(other.flags["new_checkout"]?.value == false)
        #expect(server.requests.map(\.path) == ["/flags/venue-42.json", "/flags/venue-7.json"])
        #expect(server.requests.allSatisfy { $0.method == "GET" })
        // A context without the attribute never reaches the network.
        let missing = await fetchError(client, EvaluationContext(targetingKey: "u"))
        #expect(missing?.errorCode == .invalidContext)
        #expect(server.requestCount == 2)
    }

    @Test func hotReloadOfTheServedFile() async throws {
        let dir = TempDir()
        let file = dir.url("flags.json")
        try Data(ServerDocument.seedExample.jsonBytes()).write(to: file)
        let server = try FlagServer(file: file.path)
        defer { server.stop() }
        let client = OnlineClient(endpoint: JSONFlagEndpoint(post: server.flagsURL))
        defer { client.shutdown() }
        #expect(snapshot(of: try await client.fetch(for: auraPersonal))?.flags["plan_themeColor"]?.value == "#3498DB")
        var changed = ServerDocument.seedExample
        changed.rules[1].flags["plan_themeColor"] = FlagEntry(value: "#112233")
        try Data(changed.jsonBytes()).write(to: file)
        #expect(snapshot(of: try await client.fetch(for: auraPersonal))?.flags["plan_themeColor"]?.value == "#112233")
        #expect(server.reloadCount == 1)
        // A broken edit keeps the last good document.
        try Data("{ not json".utf8).write(to: file)
        #expect(try await client.fetch(for: auraPersonal) == .notModified)
        #expect(server.lastReloadError != nil)
        #expect(server.reloadCount == 1)
    }

    @Test func concurrentFetchesForOneContextShareOneRequest() async throws {
        let (server, client, endpoint) = try makeServerAndClient()
        defer { server.stop(); client.shutdown() }
        server.latency = .milliseconds(200)
        let results = await withTaskGroup(of: FlagFetchResult?.self) { group in
            for _ in 0..<5 { group.addTask { try? await client.fetch(for: auraPersonal) } }
            var all: [FlagFetchResult?] = []
            for await r in group { all.append(r) }
            return all
        }
        #expect(results.count == 5)
        #expect(results.allSatisfy { $0 != nil && $0 == results[0] })
        #expect(server.requestCount == 1)
        #expect(endpoint.decodeCount == 1)
        #expect(client.fetchesInFlight == 0)
        // Different contexts do not wait for each other.
        _ = await (try? client.fetch(for: auraPersonal), try? client.fetch(for: auraBusiness))
        #expect(server.requestCount == 3)
    }

    @Test func authHeadersAreSentButNeverShown() async throws {
        let (server, client, _) = try makeServerAndClient(headers: ["Authorization": "Bearer top-secret-token"])
        defer { server.stop(); client.shutdown() }
        _ = try await client.fetch(for: auraPersonal)
        #expect(server.requests.first?.headers["authorization"] == "Bearer top-secret-token")
        server.fault = .status(500, retryAfter: nil)
        let error = try #require(await fetchError(client, auraPersonal))
        for text in [error.description, "\(error)", String(reflecting: error)] {
            #expect(!text.contains("top-secret-token"))
            #expect(!text.contains("user-1"))
            #expect(!text.contains("auralink"))
        }
    }

    @Test func refusesPlainHTTPOffLoopbackWithoutTouchingTheNetwork() async throws {
        let client = OnlineClient(endpoint: JSONFlagEndpoint(post: URL(string: "http://flags.example.com/flags?key=abc")!))
        defer { client.shutdown() }
        let error = await fetchError(client, auraPersonal)
        #expect(error == .insecureURL(host: "flags.example.com"))
        #expect(error?.isFatal == true)
        #expect(error?.description.contains("key=abc") == false)
        // Opting in lets the request go (here to an unroutable test address, so it fails otherwise).
        let optedIn = OnlineClient(
            endpoint: JSONFlagEndpoint(post: URL(string: "http://192.0.2.1:9/flags")!),
            configuration: .init(deadline: .milliseconds(300), allowInsecureHTTP: true))
        defer { optedIn.shutdown() }
        let other = await fetchError(optedIn, auraPersonal)
        #expect(other != nil)
        #expect(other.map { if case .insecureURL = $0 { false } else { true } } == true)
    }

    @Test func shutdownRefusesLaterFetches() async throws {
        let (server, client, _) = try makeServerAndClient()
        defer { server.stop() }
        client.shutdown()
        client.shutdown()
        #expect(await fetchError(client, auraPersonal) == .cancelled)
        #expect(server.requestCount == 0)
    }
}
