import FeatureFlagsFlagd
import FeatureFlagsTesting
import FeatureFlagsUI
import FlagServer
import Foundation
import Testing
import TestSupport
@testable import FeatureFlags

/// OpenFeature's Multi-Provider strategies, per flag, over a set of services: the combination alone, then two static
/// hosts on loopback through a provider, its fallback file and a ``FallbackClient``.
@Suite("A set of services, combined per flag")
struct ServiceSetTests {
    static let fingerprint = "f"

    static func service(_ name: String, _ flags: [String: FlagEntry]?, held: Bool = false) -> ServiceValues {
        ServiceValues(name: name, snapshot: flags.map { FlagSnapshot(flags: $0, version: name) }, held: held)
    }

    static func combine(_ strategy: ServiceStrategy, _ services: [ServiceValues]) -> (snapshot: FlagSnapshot, disagreements: [FlagEvent]) {
        strategy.combine(services, killSwitchKey: "kill_switch", fingerprint: fingerprint)
    }

    // MARK: The combination

    @Test func firstMatchMovesOnPastNotFoundButAnErrorIsTheAnswer() {
        let result = Self.combine(.firstMatch, [
            Self.service("a", [
                "shared": FlagEntry(value: 1),
                "gone": FlagEntry(value: nil, reason: .error, errorCode: .flagNotFound),
                "broken": FlagEntry(value: nil, reason: .error, errorCode: .parseError),
            ]),
            Self.service("b", ["shared": FlagEntry(value: 2), "gone": FlagEntry(value: "b"), "broken": FlagEntry(value: "b"), "only_b": FlagEntry(value: true)]),
        ])
        let flags = result.snapshot.flags
        #expect(flags["shared"]?.value == 1 && flags["shared"]?.service == "a")
        #expect(flags["gone"]?.value == "b" && flags["gone"]?.service == "b", "FLAG_NOT_FOUND moves on")
        #expect(flags["broken"]?.errorCode == .parseError && flags["broken"]?.service == "a", "any other error is the answer")
        #expect(flags["only_b"]?.service == "b")
        #expect(result.disagreements.isEmpty)
        #expect(result.snapshot.version == "a+b")
    }

    @Test func firstSuccessfulMovesOnPastAnyError() {
        let result = Self.combine(.firstSuccessful, [
            Self.service("a", ["broken": FlagEntry(value: nil, reason: .error, errorCode: .parseError), "both_fail": FlagEntry(value: nil, errorCode: .general)]),
            Self.service("b", ["broken": FlagEntry(value: "b"), "both_fail": FlagEntry(value: nil, errorCode: .parseError)]),
        ])
        #expect(result.snapshot.flags["broken"]?.value == "b" && result.snapshot.flags["broken"]?.service == "b")
        #expect(result.snapshot.flags["both_fail"]?.errorCode == .general, "no service succeeded: the first error is the answer")
    }

    @Test func aServiceWithoutValuesIsSkipped() {
        let result = Self.combine(.firstMatch, [Self.service("a", nil), Self.service("b", ["x": FlagEntry(value: 1)])])
        #expect(result.snapshot.flags["x"]?.service == "b")
    }

    @Test func comparisonServesAgreementAndReportsEachDisagreement() {
        let services = [
            Self.service("a", ["same": FlagEntry(value: true), "shared": FlagEntry(value: 1), "only_a": FlagEntry(value: "a")]),
            Self.service("b", ["same": FlagEntry(value: true), "shared": FlagEntry(value: 2)]),
        ]
        let byFirst = Self.combine(.comparison(answering: 0), services)
        #expect(byFirst.snapshot.flags["same"]?.value == true)
        #expect(byFirst.snapshot.flags["shared"]?.value == 1)
        #expect(byFirst.snapshot.flags["only_a"]?.value == nil && byFirst.snapshot.flags["only_a"]?.errorCode == .flagNotFound,
            "a flag one service lacks is that service's error")
        let event = byFirst.disagreements.first
        #expect(byFirst.disagreements.count == 1)
        #expect(event?.kind == .servicesDisagree && event?.flag == "shared" && event?.payloadFingerprint == Self.fingerprint)
        #expect(event?.serviceValues == ["a": 1, "b": 2])
        #expect(event?.metric?.name == "rc_service_mismatches")
        #expect(event?.description == "services_disagree shared context=f a=1 b=2")
        let bySecond = Self.combine(.comparison(answering: 1), services)
        #expect(bySecond.snapshot.flags["shared"]?.value == 2 && bySecond.snapshot.flags["shared"]?.service == "b")
    }

    @Test(arguments: [ServiceStrategy.firstMatch, .firstSuccessful, .comparison(answering: 0)])
    func aKillFromAnyServiceKills(strategy: ServiceStrategy) {
        let result = Self.combine(strategy, [
            Self.service("a", ["kill_switch": FlagEntry(value: false), "x": FlagEntry(value: 1)]),
            Self.service("b", ["kill_switch": FlagEntry(value: true), "x": FlagEntry(value: 1)]),
        ])
        #expect(result.snapshot.flags["kill_switch"]?.value == true && result.snapshot.flags["kill_switch"]?.service == "b")
        #expect(result.disagreements.isEmpty, "the kill switch is not compared: any kill kills")
    }

    @Test func aKillSaidAsTextKillsAndAnErrorsValueIsNotServed() {
        let killed = Self.combine(.firstMatch, [
            Self.service("a", ["kill_switch": FlagEntry(value: false)]),
            Self.service("firebase", ["kill_switch": FlagEntry(value: "TRUE")]),
        ])
        #expect(killed.snapshot.isKillSwitchOn(key: "kill_switch") && killed.snapshot.flags["kill_switch"]?.service == "firebase")
        let failed = Self.combine(.firstMatch, [Self.service("a", ["x": FlagEntry(value: 5, reason: .error, errorCode: .parseError)])])
        #expect(failed.snapshot.flags["x"]?.value == nil && failed.snapshot.flags["x"]?.errorCode == .parseError,
            "an error's value is not a result (Appendix A, \"Interpreting Errors\")")
    }

    @Test func aServicesEntriesCountWithTheirContextAgainstCapacity() throws {
        let store = LastKnownGoodStore.inMemory(capacity: 2)
        let policy = DevicePolicy(
            trust: nil, endpoints: (0..<3).map { FlagEndpoint.json(get: URL(string: "http://h/\($0)")!) }, strategy: .firstMatch)
        for user in ["u1", "u2", "u3"] {
            let context = EvaluationContext(targetingKey: user)
            var members: [String: StoredFlags] = [:]
            for service in 0..<3 {
                members[policy.serviceKey(context.fingerprint, service: service)] = StoredFlags(snapshot: FlagSnapshot(values: ["s": .int(service)]), etag: nil)
            }
            try store.save(StoredFlags(snapshot: FlagSnapshot(values: ["s": 0]), etag: nil), for: context, members: members)
        }
        let kept = ["u2", "u3"].map { EvaluationContext(targetingKey: $0).fingerprint }
        #expect(store.fingerprints == kept.reversed(), "two contexts kept whole, the oldest left with its services")
        for fingerprint in kept {
            for service in 0..<3 {
                guard case .found? = store.lookup(policy.serviceKey(fingerprint, service: service)) else {
                    Issue.record("service \(service) of a kept context was evicted")
                    continue
                }
            }
        }
        #expect(store.lookup(policy.serviceKey(EvaluationContext(targetingKey: "u1").fingerprint, service: 2)) == nil)
    }

    @Test func heldValuesStandingInReadCached() {
        let result = Self.combine(.firstMatch, [Self.service("a", ["x": FlagEntry(value: 1, reason: .targetingMatch)], held: true)])
        #expect(result.snapshot.flags["x"]?.reason == .cached && result.snapshot.flags["x"]?.value == 1)
    }

    @Test func duplicateNamesAreNumbered() {
        let policy = DevicePolicy(
            trust: nil, endpoints: [.json(get: URL(string: "http://h/a")!), .json(get: URL(string: "http://h/b")!), .json(get: URL(string: "http://h/c")!).named("cdn")],
            strategy: .firstMatch)
        #expect(policy.serviceNames == ["json_1", "json_2", "cdn"])
        #expect(policy.servesSet)
        #expect(!DevicePolicy(trust: nil, endpoints: policy.endpoints).servesSet, "a chain is not a set")
    }

    // MARK: Two static hosts

    static let documentA = #"{"flags": {"a": "a", "shared": 1}}"#
    static let documentB = #"{"flags": {"b": "b", "shared": 2}}"#
    static let context = EvaluationContext(targetingKey: "u1")

    struct Set {
        let a: StaticHost
        let b: StaticHost
        let dir = TempDir()

        init() throws {
            a = try StaticHost(files: ["/flags.json": ServiceSetTests.documentA])
            b = try StaticHost(files: ["/flags.json": ServiceSetTests.documentB])
        }

        var endpoints: [FlagEndpoint] { [FlagEndpoint.json(get: a.url("flags.json")).named("A"), FlagEndpoint.json(get: b.url("flags.json")).named("B")] }

        func provider(_ strategy: ServiceStrategy, reachable: Bool = true, schema: FlagSchema? = nil) -> FeatureFlagProvider {
            var configuration = FlagFetcher.Configuration.loopback
            configuration.strategy = strategy
            return FeatureFlagProvider(
                context: ServiceSetTests.context, fetcher: FlagFetcher(endpoints: endpoints, configuration: configuration),
                store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), configuration: .init(schema: schema),
                reachability: ManualReachability(reachable), lifecycle: ManualLifecycle(foreground: true))
        }

        func stop() {
            a.stop()
            b.stop()
        }
    }

    @Test(.hangLimit())
    func eachFlagComesFromTheServiceThatHasIt() async throws {
        let set = try Set()
        defer { set.stop() }
        let provider = set.provider(.firstMatch)
        defer { provider.shutdown() }
        #expect(await provider.refresh().isSuccess)
        #expect(provider.status == .ready, "\(provider.recentEvents)")
        #expect(provider.flagValue("a") == "a" && provider.flagValue("b") == "b" && provider.flagValue("shared") == 1)
        #expect(provider.flagDetails("a").service == "A" && provider.flagDetails("b").service == "B")
        #expect(provider.flagDetails("shared").service == "A")
        #expect(provider.status == .ready)
        #expect(set.a.requests == ["GET /flags.json"] && set.b.requests == ["GET /flags.json"], "both asked at once, once each")
    }

    @Test(.hangLimit())
    func aServiceThatFailsServesItsOwnLastGoodValuesAndTheOthersTheirs() async throws {
        let set = try Set()
        defer { set.a.stop() }
        let provider = set.provider(.firstMatch)
        defer { provider.shutdown() }
        #expect(await provider.refresh().isSuccess)
        set.b.stop()
        set.a.set("/flags.json", #"{"flags": {"a": "a2", "shared": 1}}"#)
        let outcome = await provider.refresh()
        #expect(outcome.isSuccess, "\(outcome) \(provider.recentEvents) \(set.a.requests)")
        #expect(provider.flagValue("a") == "a2", "A's new value from the network")
        #expect(provider.flagValue("b") == "b" && provider.flagDetails("b").reason == .cached, "B's from its last good values")
        #expect(provider.status == .error)
        #expect(provider.recentEvents.contains { $0.kind == .fetchFailed })
        // Still down at the next poll: no `ready` and `error` again, only the failure.
        let errorsBefore = provider.recentEvents.filter { $0.kind == .error || $0.kind == .ready }.count
        _ = await provider.refresh()
        #expect(provider.recentEvents.filter { $0.kind == .error || $0.kind == .ready }.count == errorsBefore)
        #expect(provider.status == .error)
        // Relaunched offline: each service's values come back from the one fallback file.
        provider.shutdown()
        let relaunched = set.provider(.firstMatch, reachable: false)
        defer { relaunched.shutdown() }
        #expect(relaunched.flagValue("a") == "a2" && relaunched.flagValue("b") == "b")
        #expect(relaunched.flagDetails("b").service == "B" && relaunched.flagDetails("b").source == .fallback)
        let fallback = FallbackClient(
            store: LastKnownGoodStore(fileURL: set.dir.url("flags.lkg")), context: Self.context, endpoints: set.endpoints,
            strategy: .firstMatch)
        #expect(fallback.flagValue("a") == "a2" && fallback.flagValue("b") == "b" && fallback.flagValue("shared") == 1)
    }

    @Test(.hangLimit())
    func aNotModifiedFromOneLeavesTheOthersUntouched() async throws {
        let set = try Set()
        defer { set.stop() }
        let provider = set.provider(.firstSuccessful)
        defer { provider.shutdown() }
        #expect(await provider.refresh().isSuccess)
        set.a.set("/flags.json", #"{"flags": {"a": "a3", "shared": 3}}"#)
        #expect(await provider.refresh() == .updated(["a", "shared"]))
        #expect(provider.flagValue("b") == "b" && provider.flagValue("shared") == 3)
        #expect(provider.flagDetails("b").reason != .cached, "a 304 confirms B's values: they are not standing in")
        provider.waitForWrites()
        let store = LastKnownGoodStore(fileURL: set.dir.url("flags.lkg"))
        let policy = provider.fetcher.policy
        guard case .found(let a)? = store.lookup(policy.serviceKey(Self.context.fingerprint, service: 0)),
            case .found(let b)? = store.lookup(policy.serviceKey(Self.context.fingerprint, service: 1))
        else {
            Issue.record("each service's values are not in the file")
            return
        }
        #expect(a.snapshot.flags["a"]?.value == "a3" && b.snapshot.flags["b"]?.value == "b")
        #expect(store.fingerprints == [Self.context.fingerprint], "a service's entry is not a context")
        // A service's new value that another shadows changes nothing served, yet reaches the file.
        set.b.set("/flags.json", #"{"flags": {"b": "b", "shared": 9}}"#)
        #expect(await provider.refresh() == .unchanged)
        provider.waitForWrites()
        guard case .found(let b2)? = LastKnownGoodStore(fileURL: set.dir.url("flags.lkg")).lookup(policy.serviceKey(Self.context.fingerprint, service: 1)) else {
            Issue.record("B's values left the file")
            return
        }
        #expect(b2.snapshot.flags["shared"]?.value == 9)
    }

    @Test(.hangLimit())
    func aRejectedPayloadFromOneKeepsItsLastGoodValues() async throws {
        let set = try Set()
        defer { set.stop() }
        let schema = try FlagSchema(json: Array(#"{"flags": {"b": {"type": "string"}}}"#.utf8))
        let provider = set.provider(.firstMatch, schema: schema)
        defer { provider.shutdown() }
        #expect(await provider.refresh().isSuccess)
        set.b.set("/flags.json", #"{"flags": {"b": 7, "shared": 2}}"#)
        set.a.set("/flags.json", #"{"flags": {"a": "a4", "shared": 1}}"#)
        #expect(await provider.refresh().isSuccess)
        #expect(provider.flagValue("a") == "a4" && provider.flagValue("b") == "b")
        #expect(provider.recentEvents.contains { $0.kind == .payloadRejected })
        #expect(provider.status == .error)
    }

    @Test(.hangLimit())
    func aKillFromTheSecondServiceKills() async throws {
        let set = try Set()
        defer { set.stop() }
        let provider = set.provider(.firstMatch)
        defer { provider.shutdown() }
        #expect(await provider.refresh().isSuccess)
        set.b.set("/flags.json", #"{"flags": {"b": "b", "kill_switch": true}}"#)
        #expect(await provider.refresh().isSuccess)
        #expect(provider.isKillSwitchActive)
        #expect(provider.flagValue("a") == nil, "every flag reads its safe default")
    }

    @Test(.hangLimit())
    func comparisonReportsTheMismatchAsAnEvent() async throws {
        let set = try Set()
        defer { set.stop() }
        let provider = set.provider(.comparison(answering: 1))
        defer { provider.shutdown() }
        #expect(await provider.refresh().isSuccess)
        #expect(provider.status == .ready, "\(provider.recentEvents)")
        #expect(provider.flagValue("shared") == 2)
        let mismatch = try #require(provider.recentEvents.first { $0.kind == .servicesDisagree })
        #expect(mismatch.flag == "shared" && mismatch.serviceValues == ["A": 1, "B": 2])
        #expect(mismatch.payloadFingerprint == Self.context.fingerprint)
    }

    @Test(.hangLimit())
    func whenNoServiceAnswersTheFetchFails() async throws {
        let set = try Set()
        set.stop()
        let provider = set.provider(.firstMatch)
        defer { provider.shutdown() }
        guard case .failed = await provider.refresh() else {
            Issue.record("a set with no service answering did not fail")
            return
        }
        #expect(provider.status == .error)
    }

    /// One budget: a service that never answers costs its own flags their freshness at the budget's end, never the
    /// others' (on the test clock, so the figures are exact).
    @Test(.hangLimit())
    func aHangingServiceCostsOnlyItsOwnFlagsAndNoMoreThanTheBudget() async throws {
        let a = try StaticHost(files: ["/flags.json": Self.documentA])
        let hanging = try FlagServer(document: .seedExample)
        defer { a.stop(); hanging.stop() }
        hanging.fault = .hangBeforeHeaders
        let clock = TestClock()
        let dir = TempDir()
        var configuration = FlagFetcher.Configuration(budget: .seconds(2))
        configuration.strategy = .firstMatch
        let fetcher = FlagFetcher(
            endpoints: [FlagEndpoint.json(get: a.url("flags.json")), FlagEndpoint.json(post: hanging.flagsURL)],
            configuration: configuration, clock: clock)
        let provider = FeatureFlagProvider(
            context: Self.context, fetcher: fetcher, store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")),
            reachability: ManualReachability(true), clock: clock)
        defer { provider.shutdown() }
        let refresh = Task { await provider.refresh() }
        // A answers at once; only the hanging service's budget is left waiting.
        #expect(await eventually { hanging.requestCount == 1 && a.requests.count == 1 && clock.sleeperCount == 1 })
        #expect(clock.sleeperDeadlines == [clock.now.advanced(by: .seconds(2))], "each service has the whole budget, from the start")
        clock.advance(by: .seconds(2))
        let outcome = await refresh.value
        #expect(outcome.isSuccess, "\(outcome)")
        #expect(provider.flagValue("a") == "a" && provider.flagDetails("a").reason != .cached)
        #expect(provider.status == .error)
        #expect(provider.recentEvents.contains { $0.kind == .fetchFailed && $0.fetchError?.kind == .timeout })
    }

    /// An identify asks every service for the new context; a merged identity asks every service for every member.
    @Test(.hangLimit())
    func anIdentifyAsksEveryServiceAndAMergedIdentityEveryMember() async throws {
        let set = try Set()
        defer { set.stop() }
        let provider = set.provider(.firstMatch)
        defer { provider.shutdown() }
        #expect(await provider.refresh().isSuccess)
        provider.identify(EvaluationContext(targetingKey: "u2"))
        #expect(await provider.refresh().isSuccess)
        #expect(set.a.requests.count == 2 && set.b.requests.count == 2)
        provider.identify(merging: [EvaluationContext(targetingKey: "u3"), EvaluationContext(targetingKey: "u4")])
        #expect(await provider.refresh().isSuccess)
        #expect(set.a.requests.count == 4 && set.b.requests.count == 4, "\(set.a.requests) \(set.b.requests)")
        #expect(provider.flagValue("a") == "a" && provider.flagValue("b") == "b" && provider.flagDetails("b").service == "B")
    }

    /// flagd rules on the device as one service of a set (rules for some flags, a JSON document for others), offline too,
    /// and the inspector naming each value's service.
    @Test(.hangLimit())
    func flagdRulesAreOneServiceOfASet() async throws {
        let rules = #"{"flags": {"rules_flag": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "off", "targeting": {"if": [{"==": [{"var": "targetingKey"}, "u1"]}, "on", "off"]}}}}"#
        let host = try StaticHost(files: ["/flagd.json": rules, "/flags.json": Self.documentA])
        defer { host.stop() }
        let dir = TempDir()
        var configuration = FlagFetcher.Configuration.loopback
        configuration.strategy = .firstMatch
        let endpoints = [FlagEndpoint.flagd(url: host.url("flagd.json")).named("rules"), FlagEndpoint.json(get: host.url("flags.json")).named("json")]
        func provider(reachable: Bool) -> FeatureFlagProvider {
            FeatureFlagProvider(
                context: Self.context, fetcher: FlagFetcher(endpoints: endpoints, configuration: configuration),
                store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), reachability: ManualReachability(reachable),
                lifecycle: ManualLifecycle(foreground: true))
        }
        let online = provider(reachable: true)
        let outcome = await online.refresh()
        #expect(outcome.isSuccess, "\(outcome) \(online.recentEvents)")
        #expect(online.flagValue("rules_flag") == true && online.flagDetails("rules_flag").service == "rules")
        #expect(online.flagDetails("rules_flag").reason == .targetingMatch)
        #expect(online.flagValue("a") == "a" && online.flagDetails("a").service == "json")
        let rows = FlagInspector(client: online).rows()
        #expect(rows.first { $0.key == "rules_flag" }?.service == "rules" && rows.first { $0.key == "a" }?.service == "json")
        #expect(FlagInspector.table(rows).first?.contains("SERVICE") == true)
        online.shutdown()
        let offline = provider(reachable: false)
        defer { offline.shutdown() }
        #expect(offline.flagValue("rules_flag") == true && offline.flagValue("a") == "a")
        #expect(offline.flagDetails("rules_flag").service == "rules")
    }

    /// The crash-loop guard over a set: the healthy values are the combined ones; a crash value from one service is
    /// kept out until the service sends other values.
    @Test(.hangLimit())
    func theCrashLoopGuardKeepsASetsHealthyValues() async throws {
        let set = try Set()
        defer { set.stop() }
        func launch() -> FeatureFlagProvider {
            var fetch = FlagFetcher.Configuration.loopback
            fetch.strategy = .firstMatch
            var configuration = FeatureFlagProvider.Configuration(changeStreams: false, crashLoopGuard: CrashLoopGuard(launchesBeforeSafeMode: 2, healthyAfter: nil))
            configuration.killSwitchKey = "kill_switch"
            return FeatureFlagProvider(
                context: ServiceSetTests.context, fetcher: FlagFetcher(endpoints: set.endpoints, configuration: fetch),
                store: LastKnownGoodStore(fileURL: set.dir.url("flags.lkg")), configuration: configuration,
                reachability: ManualReachability(true), lifecycle: ManualLifecycle(foreground: true))
        }
        let healthy = launch()
        #expect(await healthy.refresh().isSuccess)
        healthy.markHealthy()
        healthy.waitForWrites()
        healthy.shutdown()
        set.b.set("/flags.json", #"{"flags": {"b": "crashy", "shared": 2}}"#)
        for _ in 0..<2 {
            let crashing = launch()
            _ = await crashing.refresh()
            crashing.waitForWrites()
            crashing.shutdown()
        }
        let safe = launch()
        defer { safe.shutdown() }
        #expect(safe.safeMode != nil)
        #expect(safe.flagValue("b") == "b" && safe.flagValue("a") == "a", "the set's healthy values, before any fetch")
        _ = await safe.refresh()
        #expect(safe.safeMode != nil && safe.flagValue("b") == "b", "the same crash values are kept, not served")
        set.b.set("/flags.json", #"{"flags": {"b": "fixed", "shared": 2}}"#)
        _ = await safe.refresh()
        #expect(safe.safeMode == nil && safe.flagValue("b") == "fixed" && safe.flagDetails("b").service == "B")
    }
}
