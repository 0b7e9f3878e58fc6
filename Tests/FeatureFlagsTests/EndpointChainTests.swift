import FeatureFlagsServices
import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting
import FlagServer

@Suite("Endpoint chains and providers per service")
struct EndpointChainTests {
    @Test func firstSuccessfulAnswerWinsAndItsTagGoesBackToIt() async throws {
        let primary = try FlagServer(document: .seedExample)
        let cdn = try FlagServer(document: .seedExample)
        defer { primary.stop(); cdn.stop() }
        let client = FlagFetcher(
            endpoints: [
                FlagEndpoint.ofrep(baseURL: primary.baseURL),
                FlagEndpoint.json(urlTemplate: cdn.baseURL.absoluteString + "/flags/{venue}.json"),
            ],
            // The chain shares one budget (the first endpoint gets half): twice the loopback
            // budget gives each the time a lone endpoint has (a half of 10 s once ran out on a
            // machine loaded three times over).
            configuration: .init(budget: TestTiming.loopbackBudget * 2))
        defer { client.shutdown() }
        // The primary fails: the CDN answers, and its tag names it.
        primary.fault = .status(503, retryAfter: nil)
        let fromCDN = try #require(fetched(await client.fetch(auraPersonal)))
        #expect(fromCDN.snapshot.flags["plan_themeColor"]?.value == "#7F8C8D", "the CDN file is per venue, not per plan")
        #expect(fromCDN.etag?.endpoint == "1/json")
        // Still failing: the CDN is asked conditionally and says 304; the primary gets no tag.
        #expect(await client.fetch(auraPersonal, ifNoneMatch: fromCDN.etag) == .notModified)
        #expect(cdn.requests.map(\.status) == [200, 304])
        #expect(primary.requests.map(\.ifNoneMatch) == [nil, nil])
        // The primary recovers: its full answer wins, although the caller holds the CDN's tag.
        primary.fault = nil
        let fromPrimary = try #require(fetched(await client.fetch(auraPersonal, ifNoneMatch: fromCDN.etag)))
        #expect(fromPrimary.snapshot.flags["plan_themeColor"]?.value == "#3498DB")
        #expect(fromPrimary.etag?.endpoint == "0/ofrep")
        #expect(await client.fetch(auraPersonal, ifNoneMatch: fromPrimary.etag) == .notModified)
        #expect(primary.requests.map(\.status) == [503, 503, 200, 304])
        #expect(cdn.requestCount == 2, "the CDN is not asked while the primary answers")
        // Everything fails: the primary's error is the one reported.
        primary.fault = .status(500, retryAfter: nil)
        cdn.fault = .status(502, retryAfter: nil)
        #expect(await fetchError(client, auraBusiness)?.httpStatus == 500, "the primary's 500")
        #expect(cdn.requests.last?.status == 502)
    }

    /// The budget is the whole fetch's: a black-holed first endpoint is cut off at its share
    /// (half of 2 s for a chain of two) and the working OFREP server behind it still answers
    /// within the 2 s — on the test clock, so the figures are exact.
    @Test func aChainSharesOneBudget() async throws {
        let blackHole = try FlagServer(document: .seedExample)
        let ofrep = try FlagServer(document: .seedExample)
        defer { blackHole.stop(); ofrep.stop() }
        blackHole.fault = .hangBeforeHeaders
        let clock = TestClock()
        let dir = TempDir()
        let fetcher = FlagFetcher(
            endpoints: [FlagEndpoint.json(post: blackHole.flagsURL), FlagEndpoint.ofrep(baseURL: ofrep.baseURL)], clock: clock)
        let provider = FeatureFlagProvider(
            context: auraPersonal, fetcher: fetcher, store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")),
            reachability: ManualReachability(true), clock: clock)
        defer { provider.shutdown() }
        let refresh = Task { await provider.refresh() }
        #expect(await eventually { blackHole.requestCount == 1 })
        await clock.sleepers(atLeast: 1)
        clock.advance(by: .milliseconds(999))
        #expect(provider.status == .notReady)
        #expect(ofrep.requestCount == 0)
        clock.advance(by: .milliseconds(1))
        // The first endpoint's share is over: the second is asked at 1,000 ms of 2,000.
        #expect(await eventually { ofrep.requestCount == 1 })
        #expect(await refresh.value != .discarded)
        #expect(provider.status == .ready)
        #expect(clock.now.offset == .milliseconds(1_000), "ready at 1,000 ms, within the 2,000 ms budget")
        #expect(provider.value(FlagKey("plan_themeColor", default: "-")) == "#3498DB")
    }

    /// A fast failure leaves the whole rest of the budget to the next endpoint: refused at
    /// once, the first endpoint hands the second all 2 s (an even split would give it 1 s).
    @Test func aFastFailureLeavesTheRestOfTheBudget() async throws {
        let closed = try #require(PortReservation())
        let hanging = try FlagServer(document: .seedExample)
        defer { hanging.stop() }
        hanging.fault = .hangBeforeHeaders
        let clock = TestClock()
        let fetcher = FlagFetcher(
            endpoints: [
                FlagEndpoint.json(post: URL(string: "http://127.0.0.1:\(closed.port)/flags")!),
                FlagEndpoint.json(post: hanging.flagsURL),
            ],
            clock: clock)
        defer { fetcher.shutdown() }
        let fetch = Task { await fetcher.fetch(auraPersonal) }
        #expect(await eventually { hanging.requestCount == 1 })
        await clock.sleepers(atLeast: 1)
        #expect(clock.sleeperDeadlines == [TestClock.Instant(offset: .seconds(2))])
        clock.advance(by: .seconds(2))
        let error = try #require(await {
            if case .failed(let error) = await fetch.value { return error }
            return nil
        }())
        #expect(error.kind == .offline, "the first endpoint's error is the one reported: \(error)")
    }

    /// Every endpoint hangs: the whole fetch ends at the budget, with the first one's error.
    @Test func aChainOfHangsEndsAtTheBudget() async throws {
        let first = try FlagServer(document: .seedExample)
        let second = try FlagServer(document: .seedExample)
        defer { first.stop(); second.stop() }
        first.fault = .hangBeforeHeaders
        second.fault = .hangBeforeHeaders
        let clock = TestClock()
        let fetcher = FlagFetcher(
            endpoints: [FlagEndpoint.json(post: first.flagsURL), FlagEndpoint.json(post: second.flagsURL)], clock: clock)
        defer { fetcher.shutdown() }
        let fetch = Task { await fetcher.fetch(auraPersonal) }
        await clock.sleepers(atLeast: 1)
        clock.advance(by: .seconds(1))
        #expect(await eventually { second.requestCount == 1 })
        await clock.sleepers(atLeast: 1)
        clock.advance(by: .seconds(1))
        #expect(await fetch.value == .failed(.timeout(.seconds(1))), "the first endpoint's error: cut at its 1 s share")
        #expect(clock.now.offset == .seconds(2))
    }

    @Test func anEmptyChainFailsClearly() async {
        let client = FlagFetcher(endpoints: [FlagEndpoint]())
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
                context: auraPersonal, fetcher: FlagFetcher(endpoint: service.make(server, credential), configuration: .loopback),
                store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), reachability: ManualReachability(true))
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
