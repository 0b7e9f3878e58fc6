import Foundation
import Testing
@testable import FeatureFlags
import FeatureFlagsTesting
import FlagServer

@Suite("Endpoint chains and providers per service")
struct EndpointChainTests {
    @Test func firstSuccessfulAnswerWinsEachWithItsOwnETag() async throws {
        let primary = try FlagServer(document: .seedExample)
        let cdn = try FlagServer(document: .seedExample)
        defer { primary.stop(); cdn.stop() }
        let client = OnlineClient(endpoints: [
            OFREPEndpoint(baseURL: primary.baseURL),
            JSONFlagEndpoint(urlTemplate: cdn.baseURL.absoluteString + "/flags/{venue}.json"),
        ])
        defer { client.shutdown() }
        // The primary fails: the CDN answers.
        primary.fault = .status(503, retryAfter: nil)
        let fromCDN = try #require(snapshot(of: try await client.fetch(for: auraPersonal)))
        #expect(fromCDN.flags["plan_themeColor"]?.value == "#7F8C8D", "the CDN file is per venue, not per plan")
        // Still failing: the CDN is asked conditionally and says 304.
        #expect(try await client.fetch(for: auraPersonal) == .notModified)
        #expect(cdn.requests.map(\.status) == [200, 304])
        // The primary recovers: its full answer wins, and the CDN's tag is dropped.
        primary.fault = nil
        let fromPrimary = try #require(snapshot(of: try await client.fetch(for: auraPersonal)))
        #expect(fromPrimary.flags["plan_themeColor"]?.value == "#3498DB")
        #expect(try await client.fetch(for: auraPersonal) == .notModified)
        #expect(primary.requests.map(\.status) == [503, 503, 200, 304])
        #expect(cdn.requestCount == 2, "the CDN is not asked while the primary answers")
        // Everything fails: the primary's error is the one reported.
        primary.fault = .status(500, retryAfter: nil)
        cdn.fault = .status(502, retryAfter: nil)
        guard case .httpStatus(500, _, _)? = await fetchError(client, auraBusiness) else {
            Issue.record("expected the primary's 500")
            return
        }
        #expect(cdn.requests.last?.status == 502)
    }

    @Test func anEmptyChainFailsClearly() async {
        let client = OnlineClient(endpoints: [])
        defer { client.shutdown() }
        #expect(await fetchError(client, auraPersonal)?.description == "cannot build the request: no endpoint configured")
    }

    @Test(arguments: ServiceCase.all)
    func aProviderOnEveryServiceGoesFatalOnBadCredentials(_ service: ServiceCase) async throws {
        let server = try FlagServer(
            document: .seedExample, configuration: .init(requiredHeaders: [service.credential.name: service.credential.value]))
        defer { server.stop() }
        let dir = TempDir()
        func provider(_ credential: String) -> FeatureFlagProvider {
            FeatureFlagProvider(
                context: auraPersonal, online: OnlineClient(endpoint: service.make(server, credential)),
                fallback: FallbackClient(fileURL: dir.url("flags.lkg"), context: auraPersonal), reachability: ManualReachability(true))
        }
        let good = provider(service.credential.value)
        #expect(await good.refresh() != .discarded)
        #expect(good.status == .ready)
        #expect(good.value(FlagKey(service.name("plan_themeColor", isBool: false), default: "-")) == "#3498DB")
        good.shutdown()
        let bad = provider("not-the-key")
        defer { bad.shutdown() }
        _ = await bad.refresh()
        #expect(bad.status == .fatal)
        #expect(await bad.refresh() == .skipped("stopped after a fatal error"))
        // The Last-Known-Good from the good run is still served.
        #expect(bad.value(FlagKey(service.name("plan_themeColor", isBool: false), default: "-")) == "#3498DB")
    }
}
