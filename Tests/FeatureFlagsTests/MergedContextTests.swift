import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting
import FlagServer

private func plan(_ partner: String, _ tier: String) -> EvaluationContext {
    EvaluationContext(targetingKey: "user-1", partner: partner, planTier: tier)
}

private let allFeatures = ["usage", "billing", "support_chat", "map", "status", "team"]
private let standardFeatures = ["usage", "billing", "support_chat", "map", "status"]

/// One row of seed 001's "Features & Context Logic" table.
struct PlanRow: Sendable, CustomStringConvertible {
    let description: String
    let contexts: [EvaluationContext]
    let displayName: String
    let theme: String
    let dataLimit: Int
    let prioritySupport: Bool
    let features: [String]

    static let table: [PlanRow] = [
        PlanRow(
            description: "AuraLink Personal", contexts: [plan("auralink", "personal")], displayName: "AuraLink Personal",
            theme: "#3498DB", dataLimit: 150, prioritySupport: false, features: standardFeatures),
        PlanRow(
            description: "AuraLink Business", contexts: [plan("auralink", "business")], displayName: "AuraLink Business",
            theme: "#2C3E50", dataLimit: 750, prioritySupport: true, features: allFeatures),
        PlanRow(
            description: "ZenithSat Personal", contexts: [plan("zenithsat", "personal")], displayName: "ZenithSat Home",
            theme: "#2ECC71", dataLimit: 180, prioritySupport: false, features: standardFeatures),
        PlanRow(
            description: "ZenithSat Business", contexts: [plan("zenithsat", "business")], displayName: "ZenithSat Pro",
            theme: "#6C3483", dataLimit: 1500, prioritySupport: true, features: allFeatures),
        PlanRow(
            description: "AuraLink Combo", contexts: [plan("auralink", "personal"), plan("auralink", "business")],
            displayName: "AuraLink P. + B.", theme: "#2C3E50", dataLimit: 750, prioritySupport: true, features: allFeatures),
        PlanRow(
            description: "ZenithSat Combo", contexts: [plan("zenithsat", "personal"), plan("zenithsat", "business")],
            displayName: "ZenithSat P. + B.", theme: "#6C3483", dataLimit: 1500, prioritySupport: true, features: allFeatures),
    ]
}

/// Seed 001's combo names ("AuraLink P. + B.") are the app's own: the brand, then each
/// plan's initial, Personal first. Built from the contexts, not from any flag.
private let comboDisplayName = MergePolicy.custom { candidates in
    let brands = ["auralink": "AuraLink", "zenithsat": "ZenithSat"]
    guard candidates.count > 1, let partner = candidates[0].context.string("partner"), let brand = brands[partner] else {
        return nil
    }
    let initials = candidates.reversed().compactMap { $0.context.string("plan_tier")?.first.map { "\($0.uppercased())." } }
    return .string("\(brand) \(initials.joined(separator: " + "))")
}

private var seedMerge: ContextMerge {
    var merge = ContextMerge.seedPlans
    merge.policies["plan_displayName"] = comboDisplayName
    return merge
}

/// Seeds 000–002: "Theme policy: Top tier wins (Business > Personal). Feature policy: Union
/// across contexts." Seed 001's table, row by row, over real loopback HTTP.
@Suite("Merged contexts", .hangLimit())
struct MergedContextTests {
    private func fixture(
        _ contexts: [EvaluationContext], merge: ContextMerge = seedMerge, document: ServerDocument = .seedExample,
        dir: TempDir? = nil, server: FlagServer? = nil, reachable: Bool = true, schema: FlagSchema? = nil,
        transport: (any FlagTransport)? = nil
    ) throws -> ProviderFixture {
        let f = try ProviderFixture(
            context: contexts[0], reachable: reachable, document: document, server: server, dir: dir, transport: transport,
            configuration: .init(schema: schema, merge: merge))
        f.provider.identify(merging: contexts)
        return f
    }

    @Test(arguments: PlanRow.table)
    func seed001TableRow(_ row: PlanRow) async throws {
        let f = try fixture(row.contexts)
        defer { f.stop() }
        guard case .updated = await f.provider.refresh() else {
            Issue.record("expected activation")
            return
        }
        #expect(f.provider.value(.displayName) == row.displayName)
        #expect(f.provider.value(.themeColor) == row.theme)
        #expect(f.provider.int("plan_data_limit", default: -1) == row.dataLimit)
        #expect(f.provider.bool("plan_priority_support", default: !row.prioritySupport) == row.prioritySupport)
        #expect(f.provider.value(FlagKey("plan_feature_list", default: [String]())) == row.features)
        #expect(f.provider.contexts.count == row.contexts.count)
        #expect(f.server.requestCount == row.contexts.count)
    }

    @Test func topTierWinsWhateverTheOrderTheContextsAreGivenIn() async throws {
        let f = try fixture([plan("auralink", "business"), plan("auralink", "personal")])
        defer { f.stop() }
        _ = await f.provider.refresh()
        #expect(f.provider.value(.themeColor) == "#2C3E50")
        #expect(f.provider.contexts.map { $0.string("plan_tier") } == ["business", "personal"])
    }

    @Test func displayNameIsTopTierWithTheSeedPolicies() async throws {
        let f = try fixture([plan("auralink", "personal"), plan("auralink", "business")], merge: .seedPlans)
        defer { f.stop() }
        _ = await f.provider.refresh()
        #expect(f.provider.value(.displayName) == "AuraLink Business")
    }

    @Test func killSwitchInAnyContextApplies() async throws {
        var document = ServerDocument.seedExample
        document.rules.insert(
            .init(name: "business-kill", conditions: ["plan_tier": ["business"]], flags: ["kill_switch": FlagEntry(value: true)]),
            at: 0)
        let f = try fixture([plan("auralink", "personal"), plan("auralink", "business")], document: document)
        defer { f.stop() }
        _ = await f.provider.refresh()
        #expect(f.provider.isKillSwitchActive)
        #expect(f.provider.isKillSwitchActive)
        #expect(f.provider.value(.themeColor) == "#000000")
        // Even when the kill switch's own policy says otherwise.
        var merge = seedMerge
        merge.policies["kill_switch"] = .all
        let g = try fixture([plan("auralink", "personal"), plan("auralink", "business")], merge: merge, document: document)
        defer { g.stop() }
        _ = await g.provider.refresh()
        #expect(g.provider.isKillSwitchActive)
    }

    /// ZenithSat's two plans, merged.
    private let zenithSat = [plan("zenithsat", "personal"), plan("zenithsat", "business")]

    /// A first launch that fetches the merged `contexts` into `dir`'s fallback file.
    private func firstLaunch(_ contexts: [EvaluationContext], dir: TempDir, server: FlagServer) async throws {
        let f = try fixture(contexts, dir: dir, server: server)
        defer { f.provider.shutdown() }
        #expect(await f.provider.refresh().isSuccess)
    }

    @Test func mergedValuesSurviveAnOfflineRelaunch() async throws {
        let dir = TempDir()
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let combo = zenithSat
        try await firstLaunch(combo, dir: dir, server: server)
        let offline = try fixture(combo, dir: dir, server: server, reachable: false)
        defer { offline.provider.shutdown() }
        // Served at once from the fallback, before any fetch.
        #expect(offline.provider.value(.themeColor) == "#6C3483")
        #expect(offline.provider.int("plan_data_limit", default: 0) == 1500)
        #expect(offline.provider.details(.themeColor).source == .fallback)
        #expect(await offline.provider.refresh() == .skipped("no network path"))
        #expect(offline.provider.value(.displayName) == "ZenithSat P. + B.")
    }

    @Test func aRelaunchAsksEachMemberConditionally() async throws {
        let dir = TempDir()
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let combo = zenithSat
        try await firstLaunch(combo, dir: dir, server: server)
        #expect(server.requests.map(\.status) == [200, 200])
        // The members' answers are stored with their merge: the next launch's requests carry
        // their tags, and "not modified" to each confirms the merge without a download.
        let relaunch = try fixture(combo, dir: dir, server: server)
        defer { relaunch.provider.shutdown() }
        #expect(await relaunch.provider.refresh() == .unchanged)
        #expect(server.requests.map(\.status) == [200, 200, 304, 304])
        #expect(relaunch.provider.value(.displayName) == "ZenithSat P. + B.")
        #expect(relaunch.provider.status == .ready)
    }

    @Test func unchangedMembersAnswer304AndAreMergedFromMemory() async throws {
        let f = try fixture([plan("auralink", "personal"), plan("auralink", "business")])
        defer { f.stop() }
        _ = await f.provider.refresh()
        #expect(await f.provider.refresh() == .unchanged)
        #expect(f.server.requests.suffix(2).map(\.status) == [304, 304])
        // The service changes the Business plan only: Personal answers 304 and is merged from memory.
        var document = ServerDocument.seedExample
        for index in document.rules.indices where document.rules[index].name == "auralink-business" {
            document.rules[index].flags["plan_themeColor"] = FlagEntry(value: "#111111")
        }
        f.server.document = document
        guard case .updated(let keys) = await f.provider.refresh() else {
            Issue.record("expected activation")
            return
        }
        #expect(keys == ["plan_themeColor"])
        #expect(f.provider.value(.themeColor) == "#111111")
        #expect(f.provider.value(FlagKey("plan_feature_list", default: [String]())) == allFeatures)
    }

    @Test func aMemberWithAnInvalidPayloadRejectsTheWholeMerge() async throws {
        var document = ServerDocument.seedExample
        for index in document.rules.indices where document.rules[index].name == "auralink-personal" {
            document.rules[index].flags["plan_themeColor"] = FlagEntry(value: "#GGGGGG")
        }
        let f = try fixture([plan("auralink", "personal"), plan("auralink", "business")], document: document, schema: .seedExample)
        defer { f.stop() }
        #expect(await f.provider.refresh() == .rejected([FlagViolation(path: "flags.plan_themeColor", message: "\"#GGGGGG\" is not a hex-color")]))
        #expect(f.provider.value(.themeColor) == "#000000")
        #expect(f.provider.status == .error)
    }

    @Test func aFailingServiceKeepsTheMergedLastKnownGood() async throws {
        let f = try fixture([plan("auralink", "personal"), plan("auralink", "business")])
        defer { f.stop() }
        _ = await f.provider.refresh()
        f.server.fault = .status(500, retryAfter: nil)
        guard case .failed = await f.provider.refresh() else {
            Issue.record("expected a failure")
            return
        }
        #expect(f.provider.value(.displayName) == "AuraLink P. + B.")
        #expect(f.provider.details(.displayName).source == .fallback)
        #expect(f.provider.status == .error)
    }

    /// A merged AuraLink fixture whose two member requests are both out and held at the gate;
    /// `release()` lets them through.
    private func mergedFetchHeldAtTheGate() async throws -> (ProviderFixture, Task<FetchOutcome, Never>, release: () -> Void) {
        let transport = GatedTransport()
        let personal = plan("auralink", "personal"), business = plan("auralink", "business")
        transport.hold(personal)
        transport.hold(business)
        let f = try fixture([personal, business], transport: transport)
        let provider = f.provider
        let fetch = Task { await provider.refresh() }
        // Both requests are out at once: a merged fetch takes the slowest member's time.
        #expect(await eventually { transport.waitingCount == 2 })
        return (f, fetch, {
            transport.release(personal)
            transport.release(business)
        })
    }

    @Test func membersAreFetchedInParallel() async throws {
        let (f, fetch, release) = try await mergedFetchHeldAtTheGate()
        defer { f.stop() }
        release()
        guard case .updated = await fetch.value else {
            Issue.record("expected activation")
            return
        }
    }

    @Test func anAnswerForASupersededMergedIdentityIsDropped() async throws {
        let (f, merged, release) = try await mergedFetchHeldAtTheGate()
        defer { f.stop() }
        let provider = f.provider
        // The user leaves the combined view before the answers arrive.
        let zenith = plan("zenithsat", "business")
        provider.identify(zenith)
        release()
        #expect(await merged.value == .discarded)
        _ = await provider.refresh()
        #expect(provider.value(.themeColor) == "#6C3483")
        #expect(provider.contexts == [zenith])
    }

    @Test func oneDistinctContextIsAnOrdinaryIdentify() throws {
        let f = try fixture([plan("auralink", "business"), plan("auralink", "business")])
        defer { f.stop() }
        #expect(f.provider.contexts == [plan("auralink", "business")])
        #expect(f.provider.context == plan("auralink", "business"))
        f.provider.identify(merging: [])
        #expect(f.provider.context == plan("auralink", "business"))
    }

    @Test func theMergedIdentityHasItsOwnFingerprint() {
        let ranked = [plan("auralink", "business"), plan("auralink", "personal")]
        let identity = ContextMerge.identity(of: ranked)
        #expect(identity.fingerprint != ranked[0].fingerprint && identity.fingerprint != ranked[1].fingerprint)
        #expect(identity == ContextMerge.identity(of: ContextMerge.seedPlans.ranked(ranked.reversed())))
        #expect(identity.targetingKey == "user-1")
    }
}

/// The merge policies one by one, without a network.
@Suite("Merge policies")
struct MergePolicyTests {
    private let personal = plan("auralink", "personal")
    private let business = plan("auralink", "business")

    private func merge(_ policy: MergePolicy, _ values: FlagValue...) -> FlagValue {
        policy.merge(values.map { (context: business, value: $0) })
    }

    @Test func topTierWins() {
        #expect(merge(.topTier, "#2C3E50", "#3498DB") == "#2C3E50")
    }

    @Test func unionKeepsTheTopTiersOrderAndDropsDuplicates() {
        #expect(merge(.union, ["team", "usage"], ["usage", "map"]) == ["team", "usage", "map"])
        #expect(merge(.union, #"["team"]"#, ["usage"]) == ["team", "usage"])
        #expect(merge(.union, "not a list", ["usage"]) == ["usage"])
        #expect(merge(.union, "a", "b") == "a")
    }

    @Test func maximumAndMinimumCompareNumbersEvenAsText() {
        #expect(merge(.maximum, 150, "750") == 750)
        #expect(merge(.maximum, 150.5, 150) == 150.5)
        #expect(merge(.minimum, 150, "750") == 150)
        #expect(merge(.maximum, "lots", true) == "lots")
    }

    @Test func anyAndAllCombineBooleans() {
        #expect(merge(.any, false, "true") == true)
        #expect(merge(.any, false, false) == false)
        #expect(merge(.all, true, "false") == false)
        #expect(merge(.all, true, true, "x") == true)
        #expect(merge(.any, "x") == "x")
    }

    @Test func customFallsBackToTopTierWhenItDeclines() {
        #expect(merge(.custom { _ in nil }, 1, 2) == 1)
        #expect(merge(.custom { .int($0.count) }, 1, 2) == 2)
    }

    @Test func contextsAreRankedByTierThenByTheOrderGiven() {
        let other = plan("auralink", "enterprise")
        let anonymous = EvaluationContext(targetingKey: "user-2")
        let ranked = ContextMerge.seedPlans.ranked([anonymous, personal, other, business, personal])
        #expect(ranked == [business, personal, anonymous, other])
        #expect(ContextMerge().ranked([personal, business]) == [personal, business])
    }

    @Test func mergedSnapshotsCarryEveryMembersVersionAndTheShortestLife() {
        let a = FlagSnapshot(values: ["x": 1], version: "b1", fetchedAt: Date(timeIntervalSince1970: 200), ttl: 60)
        let b = FlagSnapshot(values: ["y": 2], version: "p1", fetchedAt: Date(timeIntervalSince1970: 100), ttl: 600)
        let identity = ContextMerge.identity(of: [business, personal])
        let merged = ContextMerge().merge([(business, a), (personal, b)], killSwitchKey: "kill_switch", identity: identity)
        #expect(merged.version == "b1+p1")
        #expect(merged.fetchedAt == Date(timeIntervalSince1970: 100))
        #expect(merged.ttl == 60)
        #expect(merged.flags["x"]?.value == 1 && merged.flags["y"]?.value == 2)
        #expect(merged.contextFingerprint == identity.fingerprint)
        #expect(merged.signature == nil, "no member was signed")
    }

    @Test func aMergeOfSignedAnswersIsCurrentUntilTheFirstOfThemExpires() {
        var a = FlagSnapshot(values: ["x": 1], version: "b1", fetchedAt: Date(timeIntervalSince1970: 200))
        var b = FlagSnapshot(values: ["y": 2], version: "p1", fetchedAt: Date(timeIntervalSince1970: 100))
        a.signature = SignatureStamp(keyID: "ops", issuedAt: Date(timeIntervalSince1970: 50), expiresAt: Date(timeIntervalSince1970: 900))
        b.signature = SignatureStamp(keyID: "ops", issuedAt: Date(timeIntervalSince1970: 80), expiresAt: Date(timeIntervalSince1970: 600))
        let identity = ContextMerge.identity(of: [business, personal])
        let merged = ContextMerge().merge([(business, a), (personal, b)], killSwitchKey: "kill_switch", identity: identity)
        #expect(merged.signature?.expiresAt == Date(timeIntervalSince1970: 600))
        #expect(merged.signature?.issuedAt == Date(timeIntervalSince1970: 80))
        #expect(merged.signature?.envelope.isEmpty == true, "no signed answer of its own")
        #expect(!merged.isExpired(at: Date(timeIntervalSince1970: 599)) && merged.isExpired(at: Date(timeIntervalSince1970: 600)))
        // One member without an expiry: the other's still counts.
        b.signature = SignatureStamp(keyID: "ops", issuedAt: Date(timeIntervalSince1970: 80), expiresAt: nil)
        #expect(ContextMerge().merge([(business, a), (personal, b)], killSwitchKey: "kill_switch", identity: identity)
            .signature?.expiresAt == Date(timeIntervalSince1970: 900))
        // A member not signed: the merge is not a signed one.
        b.signature = nil
        #expect(ContextMerge().merge([(business, a), (personal, b)], killSwitchKey: "kill_switch", identity: identity).signature == nil)
    }
}
