import Foundation
import Observation
import Testing
import TestSupport
@testable import FeatureFlags
@testable import FeatureFlagsUI
import FeatureFlagsTesting
import FlagServer

/// The debug screen's data: rows for every known key, the text, and the observable model.
@Suite("Flag inspector")
struct FlagInspectorTests {
    static let newCheckout = FlagKey("new_checkout", default: false)
    static let tip = FlagKey("tip_percent", default: 10)
    static let neverServed = FlagKey("dark_mode", default: true)

    @Test func everyKnownKeyHasARowSaysWhereItsValueComesFrom() throws {
        let overrides = FlagOverrides(fileURL: nil, allowed: true, launch: nil)
        let client = InMemoryFlagClient(["new_checkout": false, "tip_percent": "lots", "banner": "hi"], version: "v7", overrides: overrides)
        try overrides.override("experiment_x", "b")
        try overrides.override(Self.newCheckout, true)
        let inspector = FlagInspector(client: client, declaring: [Self.newCheckout, Self.tip, Self.neverServed], overrides: overrides)
        let rows = inspector.rows()
        #expect(rows.map(\.key) == ["banner", "dark_mode", "experiment_x", "new_checkout", "tip_percent"])
        let byKey = Dictionary(uniqueKeysWithValues: rows.map { ($0.key, $0) })
        #expect(byKey["new_checkout"]?.value == true && byKey["new_checkout"]?.isOverridden == true)
        #expect(byKey["new_checkout"]?.source == .override && byKey["new_checkout"]?.declaredType == .boolean)
        #expect(byKey["dark_mode"]?.value == true && byKey["dark_mode"]?.errorCode == .flagNotFound, "declared, never served: its default")
        #expect(byKey["tip_percent"]?.value == 10 && byKey["tip_percent"]?.errorCode == .typeMismatch, "the declared type decides")
        #expect(byKey["banner"]?.declaredType == nil && byKey["banner"]?.version == "v7" && byKey["banner"]?.isOverridden == false)
        #expect(byKey["experiment_x"]?.value == "b" && byKey["experiment_x"]?.isOverridden == true)
    }

    @Test func theTextIsTheTableFlagctlPrints() throws {
        let overrides = FlagOverrides(fileURL: nil, allowed: true, launch: nil)
        let client = InMemoryFlagClient(["new_checkout": false, "evil\u{1B}[2J": "x"], overrides: overrides)
        try overrides.override(Self.newCheckout, true)
        let text = FlagInspector(client: client, overrides: overrides).text(events: [.ready, .killSwitch(active: false)])
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines[0] == "status READY · kill switch off · 1 override")
        #expect(lines[1].hasPrefix("FLAG") && lines[1].hasSuffix("OVERRIDE"))
        #expect(lines.contains { $0.hasPrefix("new_checkout") && $0.contains("override") && $0.hasSuffix("yes") })
        #expect(lines.contains { $0.hasPrefix("evil\\u{1B}[2J") }, "control characters escaped")
        #expect(Array(lines.suffix(3)) == ["recent events:", "  ready", "  kill_switch off"])
        let forbidden = FlagInspector(client: client, overrides: FlagOverrides(fileURL: nil, allowed: false, launch: nil))
        #expect(forbidden.statusLine().hasSuffix("overrides forbidden in this build"))
    }

    @Test func inspectingRunsNoHookAndReportsNoExposure() async throws {
        let dir = TempDir()
        try seedFallback(dir, ["new_checkout": true], for: auraPersonal)
        let client = FallbackClient(store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), context: auraPersonal, exposures: true)
        let journal = Locked<[String]>([])
        client.addHooks(RecordingHook("H", journal))
        let events = client.events()
        _ = FlagInspector(client: client, declaring: [Self.newCheckout]).text()
        #expect(journal.withLock { $0 }.isEmpty)
        _ = client.value(Self.newCheckout)  // the app's first read: still the first exposure
        client.shutdown()
        var exposures = 0
        for await event in events where event.kind == .exposure { exposures += 1 }
        #expect(exposures == 1)
    }

    @MainActor
    @Test func theModelFollowsValuesOverridesStatusAndEvents() async throws {
        let overrides = FlagOverrides(fileURL: nil, allowed: true, launch: nil)
        let client = InMemoryFlagClient(["new_checkout": false], overrides: overrides)
        let model = FlagInspectorModel(FlagInspector(client: client, declaring: [Self.newCheckout], overrides: overrides))
        defer { model.stop() }
        #expect(model.rows.map(\.key) == ["new_checkout"] && model.rows.first?.value == false && model.canOverride)

        let changed = Locked(false)
        withObservationTracking { _ = model.rows } onChange: { changed.withLock { $0 = true } }
        model.override("new_checkout", true)
        #expect(model.rows.first?.value == true && model.rows.first?.isOverridden == true && model.lastError == nil)
        #expect(changed.withLock { $0 }, "a view reading the rows re-renders")

        client.set("tip_percent", 12)
        #expect(await eventually { model.rows.contains { $0.key == "tip_percent" } }, "a change from the service shows")
        client.setKillSwitch(true)
        #expect(await eventually { model.isKillSwitchActive && model.events.contains { $0.kind == .killSwitch } })
        #expect(model.rows.first { $0.key == "new_checkout" }?.source == .killSwitch, "killed beats overridden, and the row says so")
        #expect(model.text.contains("kill switch ON"))

        model.clearAllOverrides()
        #expect(model.rows.first { $0.key == "new_checkout" }?.isOverridden == false)
    }

    @MainActor
    @Test func aForbiddingBuildKeepsTheErrorForTheScreen() {
        let client = InMemoryFlagClient(["new_checkout": false])
        let forbidden = FlagInspectorModel(FlagInspector(client: client, overrides: FlagOverrides(fileURL: nil, allowed: false, launch: nil)))
        defer { forbidden.stop() }
        #expect(!forbidden.canOverride)
        forbidden.override("new_checkout", true)
        #expect(forbidden.lastError == .overridesForbidden && forbidden.rows.first?.value == false)
        let none = FlagInspectorModel(FlagInspector(client: client))
        defer { none.stop() }
        none.clearOverride("new_checkout")
        #expect(none.lastError == .overridesForbidden)
    }
}

extension FlagInspectorTests {
    /// A failed fetch changes no value but every row's label: the values are now the fallback's
    /// (`CACHED`), then `STALE` past their TTL. The rows say so as the status moves.
    @MainActor
    @Test func theRowsFollowTheLabelsWhenTheStatusMoves() async throws {
        var short = ServerDocument.seedExample
        short.base.ttl = 60
        let f = try ProviderFixture(document: short)
        defer { f.stop() }
        #expect(await f.provider.refresh().isSuccess)
        let model = FlagInspectorModel(FlagInspector(client: f.provider))
        defer { model.stop() }
        let row = { model.rows.first { $0.key == "plan_themeColor" } }
        #expect(row()?.reason == .targetingMatch && row()?.source == .network)

        f.server.fault = .status(500, retryAfter: nil)
        f.clock.advance(by: .seconds(30))
        _ = await f.provider.refresh()
        #expect(f.provider.details(.themeColor).reason == .cached)
        #expect(await eventually { model.status == .error })
        #expect(row()?.reason == .cached && row()?.source == f.provider.details(.themeColor).source, "\(String(describing: row()))")

        f.clock.advance(by: .seconds(60))
        _ = await f.provider.refresh()
        #expect(await eventually { model.status == .stale })
        #expect(row()?.reason == .stale, "\(String(describing: row()))")
    }
}
