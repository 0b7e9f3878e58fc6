import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
@testable import FeatureFlagsUI
import FeatureFlagsTesting
import FlagServer

private let venue42 = EvaluationContext(targetingKey: "user-1", venue: "venue-42", partner: "auralink", planTier: "personal")

/// Clients carrying overrides: what reads and details say, what changes are announced, and
/// the rules that never bend — the kill switch beats an override, safe mode ignores them.
@Suite("Serving overrides")
struct OverrideServingTests {
    static let newCheckout = FlagKey("new_checkout", default: false)
    static let tip = FlagKey("tip_percent", default: 10)

    @Test func anOverrideWinsOverTheServiceAndSaysSo() throws {
        let overrides = FlagOverrides(fileURL: nil, allowed: true, launch: nil)
        let client = InMemoryFlagClient(["new_checkout": false, "tip_percent": 12], overrides: overrides)
        try overrides.override(Self.newCheckout, true)
        #expect(client.value(Self.newCheckout) == true)
        #expect(client.bool("new_checkout", default: false) == true, "untyped reads see it too")
        let details = client.details(Self.newCheckout)
        #expect(details.value == true && details.source == .override && details.reason == .static)
        #expect(details.variant == nil && details.errorCode == nil)
        #expect(client.value(Self.tip) == 12, "other flags are the service's")

        try overrides.clearOverride(Self.newCheckout)
        #expect(client.value(Self.newCheckout) == false, "clearing brings the service's value back at once")
    }

    @Test func anOverrideOfTheWrongTypeReadsTheDefaultWithTypeMismatch() throws {
        let overrides = FlagOverrides(fileURL: nil, allowed: true, launch: nil)
        let client = InMemoryFlagClient(["tip_percent": 12], overrides: overrides)
        try overrides.override("tip_percent", "lots")
        #expect(client.value(Self.tip) == 10)
        let details = client.details(Self.tip)
        #expect(details.errorCode == .typeMismatch && details.reason == .error && details.source == .codeDefault)
        #expect(details.errorMessage?.contains("override") == true)
    }

    @Test func theKillSwitchBeatsEveryOverride() throws {
        let overrides = FlagOverrides(fileURL: nil, allowed: true, launch: nil)
        let client = InMemoryFlagClient(["new_checkout": false], overrides: overrides)
        try overrides.override(Self.newCheckout, true)
        client.setKillSwitch(true)
        #expect(client.value(Self.newCheckout) == false, "killed: the safe default, not the override")
        let details = client.details(Self.newCheckout)
        #expect(details.source == .killSwitch && details.reason == .disabled)
        // Overriding the kill switch itself does nothing.
        try overrides.override("kill_switch", false)
        #expect(client.isKillSwitchActive && client.value(Self.newCheckout) == false)
        client.setKillSwitch(false)
        #expect(client.value(Self.newCheckout) == true, "the override is back when the kill ends")
        try overrides.override("kill_switch", true)
        #expect(!client.isKillSwitchActive && client.value(FlagKey("kill_switch", default: false)) == false)
    }

    @Test func changesAreAnnouncedForTheFlagsThatChanged() async throws {
        let overrides = FlagOverrides(fileURL: nil, allowed: true, launch: nil)
        let client = InMemoryFlagClient(["new_checkout": false, "tip_percent": 12], overrides: overrides)
        var changes = client.changes().makeAsyncIterator()
        try overrides.override(Self.newCheckout, true)
        #expect(await changes.next()?.keys == ["new_checkout"])
        try overrides.override(Self.tip, 12)  // equal to the service's value, but overridden now
        try overrides.override(Self.tip, 15)
        #expect(await changes.next()?.keys == ["tip_percent"])
        #expect(await changes.next()?.keys == ["tip_percent"])
        // A service change under an override changes nothing a reader sees.
        client.set("new_checkout", true)
        try overrides.clearAll()
        let last = await changes.next()?.keys
        #expect(last == ["new_checkout", "tip_percent"] || last == ["tip_percent"])
    }

    @Test func aFallbackClientCarriesOverridesAndReportsAnUnusableFile() throws {
        let dir = TempDir()
        try seedFallback(dir, ["new_checkout": false], for: auraPersonal)
        try Data("{".utf8).write(to: dir.url("overrides.json"))
        let overrides = FlagOverrides(fileURL: dir.url("overrides.json"), allowed: true, launch: nil)
        let client = FallbackClient(
            store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), context: auraPersonal, overrides: overrides)
        #expect(client.recentEvents.contains { $0.kind == .overridesRejected && ($0.message ?? "").contains("kept at") })
        #expect(client.value(Self.newCheckout) == false)
        try overrides.override(Self.newCheckout, true)
        #expect(client.value(Self.newCheckout) == true && client.details(Self.newCheckout).source == .override)
    }

    @Test func oneSetOfOverridesServesEveryClientCarryingIt() throws {
        let overrides = FlagOverrides(fileURL: nil, allowed: true, launch: nil)
        let first = InMemoryFlagClient(["new_checkout": false], overrides: overrides)
        let second = InMemoryFlagClient(["new_checkout": false], killSwitchKey: "new_checkout", overrides: overrides)
        try overrides.override(Self.newCheckout, true)
        #expect(first.value(Self.newCheckout) == true)
        #expect(second.value(Self.newCheckout) == false, "that client's kill-switch key is never overridden")
    }

    // MARK: The provider

    @Test func theProviderServesOverridesOverFetchedValuesAcrossARelaunch() async throws {
        let dir = TempDir()
        let file = dir.url("overrides.json")
        let overrides = FlagOverrides(fileURL: file, allowed: true, launch: nil)
        let fixture = try ProviderFixture(context: venue42, dir: dir, configuration: .init(overrides: overrides))
        defer { fixture.stop() }
        _ = await fixture.provider.refresh()
        #expect(fixture.provider.value(Self.newCheckout) == true, "the service's value for venue-42")
        try overrides.override(Self.newCheckout, false)
        #expect(fixture.provider.value(Self.newCheckout) == false)
        #expect(fixture.provider.details(Self.newCheckout).source == FlagSource.override)
        fixture.provider.shutdown()

        // Relaunch offline: the override is still there, over the Last-Known-Good.
        let relaunched = try ProviderFixture(
            context: venue42, reachable: false, server: fixture.server, dir: dir,
            configuration: .init(overrides: FlagOverrides(fileURL: file, allowed: true, launch: nil)))
        defer { relaunched.provider.shutdown() }
        #expect(relaunched.provider.value(Self.newCheckout) == false)
        #expect(relaunched.provider.details(Self.newCheckout).source == FlagSource.override)
        #expect(relaunched.provider.details(FlagKey("plan_data_limit", default: 0)).source == FlagSource.fallback)
    }

    @Test func theServersKillSwitchBeatsTheProvidersOverrides() async throws {
        let overrides = FlagOverrides(fileURL: nil, allowed: true, launch: nil)
        try overrides.override(Self.newCheckout, true)
        try overrides.override("kill_switch", false)
        var document = ServerDocument.seedExample
        document.base.flags["kill_switch"] = FlagEntry(value: true)
        let fixture = try ProviderFixture(document: document, configuration: .init(overrides: overrides))
        defer { fixture.stop() }
        #expect(fixture.provider.value(Self.newCheckout) == true, "before the fetch: overridden")
        _ = await fixture.provider.refresh()
        #expect(fixture.provider.isKillSwitchActive)
        #expect(fixture.provider.value(Self.newCheckout) == false)
        #expect(fixture.provider.details(Self.newCheckout).source == .killSwitch)
    }

    @Test func safeModeIgnoresOverridesUntilItEnds() {
        let base = ServingBase(killSwitchKey: "kill_switch")
        let served = ServedState(base.prepare(FlagSnapshot(values: ["crashy": false], version: "v", fetchedAt: Date())), source: .fallback, status: .notReady)
        var state = ProviderState(
            context: auraPersonal, served: served, pathUp: true, configuration: .init(), base: base, random: SplitMix(seed: 1))
        state.safeMode = .init(healthy: nil, crashDigest: nil, reason: "test")
        let layer = OverrideLayer(["crashy": true], killSwitchKey: "kill_switch")
        let time = ProviderTime(elapsed: .zero, date: Date())
        #expect(state.apply(.overrides(layer), at: time).isEmpty)
        #expect(state.served.overrides == nil && state.served.lookup("crashy", killSwitchKey: "kill_switch") == false)
        let effects = state.leaveSafeMode(because: "healthy")
        #expect(effects.map(\.label) == ["emit safe_mode_left", "publish"])
        #expect(state.served.lookup("crashy", killSwitchKey: "kill_switch") == true)
    }
}

/// A provider's registration with the overrides: made at its start, ended when it goes.
@Suite("Provider and overrides")
struct ProviderOverridesRegistrationTests {
    @Test func aProviderTakesChangesAndLetsGoOfTheOverridesWhenItGoes() throws {
        let dir = TempDir()
        let overrides = FlagOverrides(fileURL: nil, allowed: true, launch: nil)
        try overrides.override("before", true)
        var configuration = FeatureFlagProvider.Configuration()
        configuration.overrides = overrides
        var provider: FeatureFlagProvider? = FeatureFlagProvider(
            context: EvaluationContext(targetingKey: "u"),
            fetcher: FlagFetcher(endpoint: .json(post: URL(string: "http://127.0.0.1:9/flags")!)),
            store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), configuration: configuration,
            reachability: AlwaysReachable(), lifecycle: AlwaysForeground())
        #expect(provider?.bool("before", default: false) == true, "set before the start")
        try overrides.override("after", true)
        #expect(provider?.bool("after", default: false) == true, "set after it: the change reached the provider")
        #expect(overrides.observerCount == 1)
        provider?.shutdown()
        provider = nil
        #expect(overrides.observerCount == 0, "a provider that is gone is no longer told")
    }
}
