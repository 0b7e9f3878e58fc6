import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting
import FlagServer

/// A provider on a flagd document over real loopback HTTP: rules fetched once, kept in the
/// fallback file, and evaluated for every context — after identify, offline, after a relaunch.
@Suite("Local evaluation provider")
struct LocalEvaluationProviderTests {
    static let rules = #"""
    {
      "flags": {
        "kiosk_mode": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "off",
          "targeting": {"if": [{"in": [{"var": "venue"}, ["venue-7", "venue-9"]]}, "on"]}},
        "theme": {"state": "ENABLED", "variants": {"light": "#FFFFFF", "dark": "#000000"}, "defaultVariant": "light",
          "targeting": {"if": [{"starts_with": [{"var": "venue"}, "night-"]}, "dark"]}},
        "kill_switch": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "off"}
      },
      "metadata": {"version": "rules-1"}
    }
    """#

    let kiosk = FlagKey<Bool>("kiosk_mode", default: false)
    let theme = FlagKey<String>("theme", default: "none")

    struct Setup {
        let server: FlagServer
        let dir: TempDir
        let clock = TestClock()
        let reachability = ManualReachability(true)
        let start = Date(timeIntervalSince1970: 1_750_000_000)

        func provider(_ context: EvaluationContext) -> FeatureFlagProvider {
            let url = server.baseURL.appendingPathComponent("flagd/flags.json")
            let clock = self.clock
            let start = self.start
            let now: @Sendable () -> Date = { start.addingTimeInterval(clock.now.offset.seconds) }
            let fetcher = FlagFetcher(endpoint: FlagdEndpoint(url: url), clock: clock, now: now)
            var configuration = FeatureFlagProvider.Configuration()
            configuration.changeStreams = false
            return FeatureFlagProvider(
                context: context, fetcher: fetcher, store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")),
                configuration: configuration, reachability: reachability, clock: clock, now: now, random: SplitMix(seed: 1))
        }
    }

    func setup() throws -> Setup {
        let server = try FlagServer(document: .seedExample)
        try server.serveFlagd(Array(Self.rules.utf8))
        return Setup(server: server, dir: TempDir())
    }

    func venue(_ name: String) -> EvaluationContext { EvaluationContext(targetingKey: "device-1", attributes: ["venue": .string(name)]) }

    @Test func rulesFetchedOnceServeEveryContextOfflineAndAfterARelaunch() async throws {
        let setup = try setup()
        defer { setup.server.stop() }
        let first = setup.provider(venue("venue-7"))
        #expect(await first.refresh().isSuccess)
        #expect(first.value(kiosk) == true)
        #expect(first.details(kiosk).reason == .targetingMatch)
        #expect(first.details(kiosk).source == .network)
        #expect(setup.server.requests.count == 1)

        // Offline: a venue never fetched is evaluated from the rules, at once.
        setup.reachability.set(false)
        first.identify(venue("night-3"))
        #expect(first.value(theme) == "#000000")
        #expect(first.value(kiosk) == false)
        #expect(first.details(theme).reason == .targetingMatch)
        #expect(first.details(theme).source == .fallback)
        first.identify(venue("venue-9"))
        #expect(first.value(kiosk) == true)
        first.shutdown()

        // A relaunch with the server gone: the persisted rules serve a third venue.
        setup.server.stop()
        let relaunched = setup.provider(venue("night-5"))
        defer { relaunched.shutdown() }
        #expect(relaunched.value(theme) == "#000000")
        #expect(relaunched.details(theme).snapshotVersion == "rules-1")
        #expect(setup.server.requests.count == 1)
    }

    @Test func unchangedRulesAreConfirmedWithA304AndNothingIsDecoded() async throws {
        let setup = try setup()
        defer { setup.server.stop() }
        let provider = setup.provider(venue("venue-7"))
        defer { provider.shutdown() }
        #expect(await provider.refresh().isSuccess)
        provider.identify(venue("night-1"))
        #expect(provider.value(theme) == "#000000")
        // The identify's fetch is conditional on the rules' tag: 304, and the served values stand.
        #expect(await provider.refresh() == .unchanged)
        #expect(setup.server.requests.map(\.status) == [200, 304])
        #expect(provider.value(theme) == "#000000")
        #expect(provider.status == .ready)
    }

    @Test func changedRulesReachTheServedContext() async throws {
        let setup = try setup()
        defer { setup.server.stop() }
        let provider = setup.provider(venue("venue-1"))
        defer { provider.shutdown() }
        #expect(await provider.refresh().isSuccess)
        #expect(provider.value(kiosk) == false)
        try setup.server.serveFlagd(Array(Self.rules.replacingOccurrences(of: "\"venue-9\"", with: "\"venue-1\"").utf8))
        #expect(await provider.refresh().isSuccess)
        #expect(provider.value(kiosk) == true)
    }

    @Test func theKillSwitchInTheRulesKillsEveryContext() async throws {
        let setup = try setup()
        defer { setup.server.stop() }
        let provider = setup.provider(venue("venue-7"))
        defer { provider.shutdown() }
        #expect(await provider.refresh().isSuccess)
        try setup.server.serveFlagd(Array(Self.rules.replacingOccurrences(of: "\"defaultVariant\": \"off\"}", with: "\"defaultVariant\": \"on\"}").utf8))
        #expect(await provider.refresh().isSuccess)
        #expect(provider.value(kiosk) == false)
        #expect(provider.details(kiosk).source == .killSwitch)
        setup.reachability.set(false)
        provider.identify(venue("venue-9"))
        #expect(provider.value(kiosk) == false)
    }

    @Test func aBrokenDocumentKeepsTheRulesHeld() async throws {
        let setup = try setup()
        defer { setup.server.stop() }
        let provider = setup.provider(venue("venue-7"))
        defer { provider.shutdown() }
        #expect(await provider.refresh().isSuccess)
        setup.server.document = .seedExample  // unrelated route: no effect
        // A document with no flags is refused by the server itself …
        #expect(throws: FlagdDocumentError.self) { try setup.server.serveFlagd(Array(#"{"flag": {}}"#.utf8)) }
        #expect(setup.server.flagdDocument != nil)
        // … and a client meeting one keeps its rules (a fake transport stands in for a broken CDN).
        let bad = FlagdEndpoint(url: URL(string: "https://cdn.example/flags.json")!)
        #expect(throws: FlagEndpointError.self) { try bad.definitions(from: FlagResponse(status: 200, body: Array("{\"flags\": 3}".utf8))) }
        provider.identify(venue("venue-9"))
        #expect(provider.value(kiosk) == true)
    }
}
