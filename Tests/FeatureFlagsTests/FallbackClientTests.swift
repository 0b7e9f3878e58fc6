import FlagServer
import Foundation
import Testing
import TestSupport
@testable import FeatureFlags

@Suite("FallbackClient")
struct FallbackClientTests {
    let personal = EvaluationContext(targetingKey: "user-1", partner: "auralink", planTier: "personal")
    let business = EvaluationContext(targetingKey: "user-1", partner: "auralink", planTier: "business")

    @Test func firstLaunchServesBundledThenCodeDefaults() async throws {
        try await blocking {
            let dir = TempDir()
            let client = FallbackClient(fileURL: dir.url("flags.lkg"), bundledDefaults: .values(["plan_themeColor": "#111111"]))
            #expect(client.store.loadOutcome == .noFile)
            #expect(client.status == .ready)
            let theme = client.details(.themeColor)
            #expect(theme.value == "#111111")
            #expect(theme.source == .bundledDefaults)
            #expect(theme.reason == .static)
            #expect(client.details(.newCheckout).source == .codeDefault)
            #expect(dir.files().isEmpty)
        }
    }

    @Test func servesTheStoredSnapshotAsTheFallback() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("flags.lkg")
            let fetched = FlagSnapshot(
                flags: ["plan_themeColor": FlagEntry(value: "#3498DB", variant: "blue", reason: .targetingMatch)],
                version: "2025-08-04T10:00:00Z", fetchedAt: Date(timeIntervalSince1970: 1_750_000_000.5), ttl: 86_400)
            try LastKnownGoodStore(fileURL: url).save(fetched, etag: nil, for: personal)
            let clock = ManualDate(Date(timeIntervalSince1970: 1_750_000_100.5))
            // No context given: the most recently used one.
            let client = FallbackClient(fileURL: url, now: clock.function)
            #expect(client.snapshot == fetched)
            let details = client.details(.themeColor)
            #expect(details.value == "#3498DB")
            #expect(details.source == .fallback)
            #expect(details.reason == .cached)
            #expect(details.variant == "blue")
            #expect(details.age == 100)
            #expect(details.snapshotVersion == "2025-08-04T10:00:00Z")
            #expect(try client.recentEvents.first == .fallbackLoaded(contexts: 1, bytes: Data(contentsOf: url).count))
            #expect(client.recentEvents.last == .ready)
        }
    }

    @Test func storedValuesPastTheirTTLReadStale() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("flags.lkg")
            let store = LastKnownGoodStore(fileURL: url)
            let fetchedAt = Date(timeIntervalSince1970: 1_750_000_000)
            try store.save(FlagSnapshot(values: ["plan_themeColor": "#3498DB"], version: "a", fetchedAt: fetchedAt, ttl: 60), etag: nil, for: personal)
            try store.save(FlagSnapshot(values: ["plan_themeColor": "#2C3E50"], version: "b", fetchedAt: fetchedAt, ttl: 600), etag: nil, for: business)
            // Two minutes on: the personal values (1-minute TTL) are stale, the business ones not.
            let clock = ManualDate(fetchedAt.addingTimeInterval(120))
            let client = FallbackClient(fileURL: url, context: personal, now: clock.function)
            #expect(client.details(.themeColor).reason == .stale && client.details(.themeColor).value == "#3498DB")
            client.identify(business)
            #expect(client.details(.themeColor).reason == .cached && client.details(.themeColor).value == "#2C3E50")
            clock.advance(600)
            client.identify(business)
            #expect(client.details(.themeColor).reason == .stale, "judged again when the context is served again")
            #expect(client.status == .ready, "a fallback client is always ready: the reason tells the age")
        }
    }

    @Test func identifyServesAnotherContextNeverAMix() async throws {
        let dir = TempDir()
        let store = LastKnownGoodStore(fileURL: dir.url("f"))
        try store.save(snapshot(auraLinkPersonal), etag: nil, for: personal)
        try store.save(snapshot(auraLinkBusiness), etag: nil, for: business)
        let client = FallbackClient(store: store, context: personal)
        #expect(client.value(.themeColor) == "#3498DB")
        let changes = client.changes()
        client.identify(business)
        #expect(client.value(.themeColor) == "#2C3E50")
        #expect(await first(1, of: changes).first?.keys.contains("plan_themeColor") == true)
        // A context with no Last-Known-Good never sees another context's values.
        client.identify(EvaluationContext(targetingKey: "user-2"))
        #expect(client.value(.themeColor) == "#000000")
        #expect(client.details(.themeColor).source == .codeDefault)
        #expect(client.snapshot == .empty)
        client.identify(personal)
        #expect(client.value(.themeColor) == "#3498DB")
        // Another client on the same store, for a specific context.
        #expect(FallbackClient(store: store, context: business).value(.themeColor) == "#2C3E50")
    }

    @Test func whatTheStoreSavesLaterIsNotServedBehindTheClientsBack() throws {
        let dir = TempDir()
        let store = LastKnownGoodStore(fileURL: dir.url("f"))
        let client = FallbackClient(store: store, context: personal)
        try store.save(snapshot(auraLinkPersonal), etag: nil, for: personal)
        // The store only stores: the client serves what it loaded until it identifies again,
        // and then what the store holds for that context now.
        #expect(client.value(.themeColor) == "#000000")
        client.identify(personal)
        #expect(client.value(.themeColor) == "#3498DB")
    }

    @Test func killSwitchSurvivesARelaunch() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("f")
            var killed = auraLinkPersonal
            killed["kill_switch"] = true
            killed["new_checkout"] = true
            try LastKnownGoodStore(fileURL: url).save(snapshot(killed), etag: nil, for: personal)
            let relaunched = FallbackClient(fileURL: url, context: personal)
            #expect(relaunched.isKillSwitchActive)
            #expect(relaunched.value(.newCheckout) == false)
            #expect(relaunched.details(.newCheckout).source == .killSwitch)
            #expect(relaunched.recentEvents.contains(.killSwitch(active: true)))
        }
    }

    @Test func bundledDefaultsFromAJSONFile() async throws {
        try await blocking {
            let dir = TempDir()
            let defaults = dir.url("defaults.json")
            try Data(##"{"plan_themeColor":"#222222","plan_data_limit":100}"##.utf8).write(to: defaults)
            let store = LastKnownGoodStore(fileURL: dir.url("f"))
            #expect(FallbackClient(store: store, context: personal, bundledDefaults: .jsonFile(defaults)).value(.themeColor) == "#222222")
            try store.save(snapshot(["plan_themeColor": "#3498DB"]), etag: nil, for: personal)
            let client = FallbackClient(store: store, context: personal, bundledDefaults: .jsonFile(defaults))
            // The snapshot wins; the defaults fill what it lacks.
            #expect(client.value(.themeColor) == "#3498DB")
            #expect(client.int("plan_data_limit", default: 0) == 100)
        }
    }

    @Test func bundledDefaultsFromAFlagDocument() async throws {
        try await blocking {
            let dir = TempDir()
            let defaults = dir.url("flags.json")
            // The file flagctl serves and lints: its "flags" object is the defaults, full forms included.
            try Data(##"""
                {"meta_config_version": "2025-08-04", "flags": {
                  "plan_themeColor": {"value": "#222222", "variant": "grey"},
                  "plan_data_limit": 100,
                  "beta": {"errorCode": "FLAG_NOT_FOUND"}}}
                """##.utf8).write(to: defaults)
            let client = FallbackClient(fileURL: dir.url("f"), context: personal, bundledDefaults: .jsonFile(defaults))
            #expect(client.value(.themeColor) == "#222222")
            #expect(client.details(.themeColor).source == .bundledDefaults)
            #expect(client.details(.themeColor).variant == "grey")
            #expect(client.int("plan_data_limit", default: 0) == 100)
            // A flag with no value is no default: the code default, no error.
            #expect(client.bool("beta", default: true) == true)
            #expect(!client.recentEvents.contains { $0.kind == .error })
            // A flat map may use the full form too.
            try Data(##"{"plan_themeColor": {"value": "#333333"}, "flags": 3}"##.utf8).write(to: defaults)
            let flat = FallbackClient(fileURL: dir.url("f"), bundledDefaults: .jsonFile(defaults))
            #expect(flat.value(.themeColor) == "#333333")
            #expect(flat.int("flags", default: 0) == 3)
        }
    }

    @Test(arguments: [
        ("[1,2", "bundled defaults defaults.json: JSON unexpected end of input at line 1, column 5 (byte 4)"),
        ("[1,2]", "bundled defaults defaults.json: is a JSON list, expected a flag document or an object of flag names to values"),
        ("{}", "bundled defaults defaults.json: holds no flag values"),
        (#"{"flags": {}}"#, "bundled defaults defaults.json: holds no flag values"),
        (#"{"flags": {"a": {"value": 1, "colour": 2}}}"#,
         #"bundled defaults defaults.json: flag "a" has unknown member "colour" (wrap object values as {"value": …})"#),
        (#"{"meta_ttl_seconds": -1, "flags": {"a": 1}}"#, "bundled defaults defaults.json: meta_ttl_seconds is negative"),
        (#"{"a": {"value": 1, "reason": 7}}"#, #"bundled defaults defaults.json: flag "a" reason is an int, expected a string"#),
    ])
    func unusableBundledDefaultsAreAnErrorEvent(contents: String, message: String) async throws {
        try await blocking {
            let dir = TempDir()
            let bad = dir.url("defaults.json")
            try Data(contents.utf8).write(to: bad)
            let client = FallbackClient(fileURL: dir.url("f"), bundledDefaults: .jsonFile(bad))
            #expect(client.value(.themeColor) == "#000000")
            #expect(client.recentEvents.contains(.error(.parseError, message: message)), "\(client.recentEvents)")
        }
    }

    @Test func missingBundledDefaultsAreAnErrorEvent() async throws {
        try await blocking {
            let dir = TempDir()
            let missing = FallbackClient(fileURL: dir.url("f"), bundledDefaults: .jsonFile(dir.url("absent.json")))
            let error = missing.recentEvents.first { $0.kind == .error }
            #expect(error?.message?.hasPrefix("bundled defaults absent.json: cannot be read:") == true)
        }
    }
}
