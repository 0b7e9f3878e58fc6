import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
@testable import FeatureFlagsFlagd
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

    /// A transport that answers over real loopback HTTP, or — once `breaks` is set — with a
    /// 200 whose body is not a definitions document (a CDN serving a broken upload).
    final class BreakableTransport: FlagTransport {
        private let inner = URLSessionTransport()
        let breaks = Locked(false)
        func send(_ request: FlagRequest, maxBytes: Int, timeout: TimeInterval) async throws(FetchError) -> FlagResponse {
            if breaks.withLock({ $0 }) { return FlagResponse(status: 200, headers: ["ETag": "\"broken\""], body: Array(#"{"flags": 3}"#.utf8)) }
            return try await inner.send(request, maxBytes: maxBytes, timeout: timeout)
        }
        func shutdown() { inner.shutdown() }
    }

    struct Setup {
        let server: FlagServer
        let dir: TempDir
        let clock = TestClock()
        let reachability = ManualReachability(true)
        let transport = BreakableTransport()
        let start = Date(timeIntervalSince1970: 1_750_000_000)

        func provider(_ context: EvaluationContext, merge: ContextMerge = ContextMerge()) -> FeatureFlagProvider {
            let url = server.baseURL.appendingPathComponent("flagd/flags.json")
            let clock = self.clock
            let start = self.start
            let now: @Sendable () -> Date = { start.addingTimeInterval(clock.now.offset.seconds) }
            // The budget is measured on the test clock, but it also bounds each request in real
            // time: the generous loopback budget, so that ThreadSanitizer on a loaded machine
            // cannot turn a loopback request into a timeout.
            let fetcher = FlagFetcher(
                endpoint: .flagd(url: url), configuration: .loopback, transport: transport, clock: clock, now: now)
            var configuration = FeatureFlagProvider.Configuration(merge: merge)
            configuration.changeStreams = false
            return FeatureFlagProvider(
                context: context, fetcher: fetcher, store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")),
                configuration: configuration, reachability: reachability, clock: clock, now: now, random: SplitMix(seed: 1))
        }

        /// A provider for `context` that has fetched the rules once.
        func fetched(_ context: EvaluationContext) async -> FeatureFlagProvider {
            let provider = provider(context)
            #expect(await provider.refresh().isSuccess)
            return provider
        }

        func stop() {
            transport.shutdown()
            server.stop()
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
        defer { setup.stop() }
        let first = await setup.fetched(venue("venue-7"))
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

    @Test func aMergedIdentityEvaluatesEachMemberFromTheHeldRules() async throws {
        let setup = try setup()
        defer { setup.stop() }
        let provider = setup.provider(venue("venue-7"), merge: ContextMerge(policies: ["kiosk_mode": .any]))
        defer { provider.shutdown() }
        #expect(await provider.refresh().isSuccess)
        setup.reachability.set(false)
        // Never fetched as a merged identity, offline: venue-3 is no kiosk, venue-9 is one, and
        // "any" of them is enough — known only by evaluating each member.
        provider.identify(merging: [venue("venue-3"), venue("venue-9")])
        #expect(provider.value(kiosk) == true)
        #expect(provider.details(kiosk).reason == .targetingMatch, "evaluated values keep their own reasons")
        #expect(provider.details(kiosk).source == .fallback)
        // Top tier (the first member here) for the theme: night-2 is dark.
        provider.identify(merging: [venue("night-2"), venue("venue-7")])
        #expect(provider.value(theme) == "#000000")
        #expect(provider.value(kiosk) == true)
    }

    @Test func unchangedRulesAreConfirmedWithA304AndNothingIsDecoded() async throws {
        let setup = try setup()
        defer { setup.stop() }
        let provider = await setup.fetched(venue("venue-7"))
        defer { provider.shutdown() }
        provider.identify(venue("night-1"))
        #expect(provider.value(theme) == "#000000")
        // The identify's fetch is conditional on the rules' tag: 304, and the served values stand.
        #expect(await provider.refresh() == .unchanged)
        #expect(setup.server.requests.map(\.status) == [200, 304])
        #expect(provider.value(theme) == "#000000")
        #expect(provider.status == .ready)
    }

    /// Rules as a build that reads them differently left them: the same document and tag, a
    /// bucketing mode this build does not know.
    final class ForeignRules: HeldRules {
        let document: [UInt8]
        let etag: EntityTag?
        let fetchedAt = Date(timeIntervalSince1970: 1_750_000_000)
        let envelope: [UInt8]? = nil
        let options = "a-mode-from-another-version"
        init(document: [UInt8], etag: EntityTag?) {
            self.document = document
            self.etag = etag
        }
        func snapshot(for context: EvaluationContext, at date: Date) -> FlagSnapshot { FlagSnapshot(values: [:]) }
        func isSame(as other: any HeldRules) -> Bool { other === self }
    }

    /// Held rules this build cannot read are not confirmed with a 304 (which would leave nothing
    /// to evaluate: a context never fetched failed "not modified for values not held", every
    /// time): the document is fetched whole and replaces them.
    @Test func heldRulesThisBuildCannotReadAreFetchedAgainWhole() async throws {
        let setup = try setup()
        defer { setup.stop() }
        let first = await setup.fetched(venue("venue-7"))
        let tag = try #require(LastKnownGoodStore(fileURL: setup.dir.url("flags.lkg")).flagdRules?.etag)
        first.shutdown()
        // The file's rules entry now holds the same document and tag, in a mode unknown here.
        let store = LastKnownGoodStore(fileURL: setup.dir.url("flags.lkg"))
        var planted = FlagSnapshot(values: ["theme": "#000000"], contextFingerprint: venue("venue-1").fingerprint)
        planted.heldRules = ForeignRules(document: Array(Self.rules.utf8), etag: tag)
        try store.save(StoredFlags(snapshot: planted, etag: tag), for: venue("venue-1"))
        #expect(store.holdsLocalRules && store.flagdRules == nil)

        let relaunched = setup.provider(venue("night-1"))
        defer { relaunched.shutdown() }
        #expect(await relaunched.refresh().isSuccess)
        #expect(setup.server.requests.last?.ifNoneMatch == nil, "unconditional")
        #expect(setup.server.requests.map(\.status) == [200, 200])
        #expect(relaunched.value(theme) == "#000000" && relaunched.details(theme).reason == .targetingMatch)
        #expect(LastKnownGoodStore(fileURL: setup.dir.url("flags.lkg")).flagdRules?.etag == tag, "the rules are readable again")
        // And from then on, conditional again: 304.
        #expect(await relaunched.refresh() == .unchanged)
        #expect(setup.server.requests.last?.ifNoneMatch == tag.value)
    }

    @Test func changedRulesReachTheServedContext() async throws {
        let setup = try setup()
        defer { setup.stop() }
        let provider = await setup.fetched(venue("venue-1"))
        defer { provider.shutdown() }
        #expect(provider.value(kiosk) == false)
        try setup.server.serveFlagd(Array(Self.rules.replacingOccurrences(of: "\"venue-9\"", with: "\"venue-1\"").utf8))
        #expect(await provider.refresh().isSuccess)
        #expect(provider.value(kiosk) == true)
    }

    @Test func theKillSwitchInTheRulesKillsEveryContext() async throws {
        let setup = try setup()
        defer { setup.stop() }
        let provider = await setup.fetched(venue("venue-7"))
        defer { provider.shutdown() }
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
        defer { setup.stop() }
        let provider = await setup.fetched(venue("venue-7"))
        defer { provider.shutdown() }
        // A document with no flags is refused by the server itself …
        #expect(throws: FlagError.self) { try setup.server.serveFlagd(Array(#"{"flag": {}}"#.utf8)) }
        #expect(setup.server.flagdDocument != nil)
        // … and a client that receives one (a broken CDN upload) says so and keeps its rules.
        setup.transport.breaks.withLock { $0 = true }
        let outcome = await provider.refresh()
        guard case .failed(let failure) = outcome, case .decode(let error) = failure.base else {
            Issue.record("a broken document must fail the fetch, not \(outcome)")
            return
        }
        #expect(error.code == FlagErrorCode.parseError)
        #expect(error.message.hasPrefix("flagd: flags: is an int"))
        provider.identify(venue("venue-9"))
        #expect(provider.value(kiosk) == true)
        #expect(provider.details(kiosk).snapshotVersion == "rules-1")
    }

    @Test func aFailedFetchKeepsTheReasonsTheRulesGave() async throws {
        let setup = try setup()
        defer { setup.stop() }
        let provider = await setup.fetched(venue("venue-7"))
        defer { provider.shutdown() }
        setup.server.stop()
        // The values fetched as rules and evaluated here: a failed fetch serves them on, as the
        // fallback, with the reasons the evaluation gave — not CACHED: nothing was recalled.
        #expect(await provider.refresh().isSuccess == false)
        #expect(provider.status == .error)
        #expect(provider.details(kiosk).reason == .targetingMatch && provider.details(kiosk).source == .fallback)
        // A venue never fetched, evaluated on the device; its own fetch fails too.
        provider.identify(venue("night-3"))
        #expect(provider.status == .reconciling && provider.details(theme).reason == .targetingMatch)
        #expect(await provider.refresh().isSuccess == false)
        #expect(provider.status == .error)
        #expect(provider.value(theme) == "#000000" && provider.details(theme).reason == .targetingMatch)
        #expect(provider.details(theme).source == .fallback && provider.details(theme).snapshotVersion == "rules-1")
    }

    @Test func aRelaunchServesTheStoredSnapshotOfTheCurrentRulesWithoutParsingThem() async throws {
        let setup = try setup()
        defer { setup.stop() }
        await setup.fetched(venue("venue-7")).shutdown()
        let store = LastKnownGoodStore(fileURL: setup.dir.url("flags.lkg"))
        #expect(store.holdsLocalRules)
        #expect(store.localRulesTag == store.lastKnownGood(for: venue("venue-7"))?.etag)
        let fetcher = FlagFetcher(endpoint: .flagd(url: setup.server.baseURL), configuration: .loopback)
        let base = ServingBase(defaults: [:], killSwitchKey: "kill_switch")
        // The context fetched under these rules: its stored values, as they are.
        #expect(LastKnownGoodReader.evaluateHeldRules(for: venue("venue-7"), policy: fetcher.policy, store: store, base: base, at: Date()) == nil)
        // Another context: evaluated from the rules.
        let other = LastKnownGoodReader.evaluateHeldRules(for: venue("venue-9"), policy: fetcher.policy, store: store, base: base, at: Date())
        #expect(other?.snapshot["kiosk_mode"]?.value == true)
        // A fetcher that does not evaluate locally never uses them.
        let remote = FlagFetcher(endpoint: .json(post: setup.server.flagsURL), configuration: .loopback)
        #expect(LastKnownGoodReader.evaluateHeldRules(for: venue("venue-9"), policy: remote.policy, store: store, base: base, at: Date()) == nil)
        let relaunched = setup.provider(venue("venue-7"))
        defer { relaunched.shutdown() }
        #expect(relaunched.value(kiosk) == true)
        #expect(relaunched.details(kiosk).reason == .cached)
    }

    @Test func aDocumentsEventStreamsAreAdvertised() throws {
        let endpoint = FlagEndpoint.flagd(url: URL(string: "https://cdn.example.com/flags/flagd.json")!)
        let body = #"{"flags": {}, "eventStreams": [{"type": "sse", "url": "https://push.example.com/events"}, {"type": "other"}]}"#
        let decoded = try endpoint.decode(FlagResponse(status: 200, body: Array(body.utf8)), for: .anonymous)
        guard decoded.flags != nil else {
            Issue.record("expected flags")
            return
        }
        #expect(decoded.streams.map(\.url.absoluteString) == ["https://push.example.com/events"])
    }

    @Test func theServerAdvertisesItsOwnStreamInAFlagdDocument() throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        try server.serveFlagd(Array(Self.rules.utf8))
        let served = try FlagJSON.parse(server.flagdDocument ?? [])
        #expect(served.objectValue?["eventStreams"] != nil)
        #expect(try served.objectValue?["flags"] == FlagJSON.parse(Self.rules).objectValue?["flags"])
    }
}
