import FeatureFlags
import FeatureFlagsFlagd
import FeatureFlagsSigning
import FeatureFlagsTesting
import Foundation
import Testing
import TestSupport

/// Tests that start from a device's past, written as an app's own tests are: public API only
/// (the signed case signs with the package's own signer, as `flagctl sign` does).
@Suite("A device's past, set up in three lines")
struct DevicePastTests {
    static let user = EvaluationContext(targetingKey: "user-1")
    static let newCheckout = FlagKey("new_checkout", default: false)
    static let limit = FlagKey("limit", default: 10)

    @Test(.hangLimit())
    func relaunchOfflineWithValuesHeld() async throws {
        let dir = TempDir()
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        try await store.remember(["new_checkout": true, "limit": 750], for: Self.user, version: "v7", age: .seconds(3_600))
        let flags = FeatureFlagProvider.forTesting(context: Self.user, store: store, reachability: ManualReachability(false))
        defer { flags.shutdown() }
        #expect(flags.value(Self.newCheckout) && flags.value(Self.limit) == 750)
        let details = flags.details(Self.newCheckout)
        #expect(details.source == .fallback && details.snapshotVersion == "v7")
        let age = try #require(details.age)
        #expect(age >= 3_590 && age < 3_700, "fetched an hour ago: \(age)")
        // A fresh store object over the same file reads the same: it is on disk.
        let reread = FallbackClient(fileURL: dir.url("flags.lkg"), context: Self.user)
        #expect(reread.snapshot.version == "v7")
        reread.shutdown()
    }

    @Test(.hangLimit())
    func firstLaunchOfflineServesTheCodeDefaults() async {
        let dir = TempDir()
        let flags = FeatureFlagProvider.forTesting(
            context: Self.user, store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), reachability: ManualReachability(false))
        defer { flags.shutdown() }
        #expect(!flags.value(Self.newCheckout) && flags.details(Self.newCheckout).source == .codeDefault)
    }

    @Test(.hangLimit())
    func theKillHoldsAfterRelaunch() async throws {
        let dir = TempDir()
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        try await store.remember(["new_checkout": true, "kill_switch": true], for: Self.user)
        let flags = FeatureFlagProvider.forTesting(context: Self.user, store: store, reachability: ManualReachability(false))
        defer { flags.shutdown() }
        #expect(flags.isKillSwitchActive && !flags.value(Self.newCheckout))
        #expect(flags.details(Self.newCheckout).source == .killSwitch)
    }

    @Test(.hangLimit())
    func theRememberedTagMakesTheFirstFetchConditional() async throws {
        let dir = TempDir()
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        try await store.remember(["new_checkout": true], for: Self.user, version: "v1", etag: "\"v1\"")
        let transport = StubTransport.serving(body: Array(#"{"flags": {"new_checkout": false}}"#.utf8), etag: "\"v1\"")
        let flags = FeatureFlagProvider.forTesting(context: Self.user, store: store, transport: transport, running: false)
        defer { flags.shutdown() }
        #expect(transport.requests.isEmpty, "not running: nothing is fetched until asked")
        #expect(await flags.refresh() == .unchanged)
        #expect(transport.requests.first?.headers["If-None-Match"] == "\"v1\"")
        #expect(flags.value(Self.newCheckout), "304: the remembered values stay")
    }

    @Test(.hangLimit())
    func aSignedPastIsServedOnlyUnderTheKeyThatSignedIt() async throws {
        let seed = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 1) }
        let keys = ["ops": SigningKeys.publicKeyPEM(Ed25519.publicKey(seed: seed))]
        let document = Array(#"{"meta_config_version": "signed-1", "flags": {"new_checkout": {"value": true}}}"#.utf8)
        let signed = JWS.sign(document, seed: seed, keyID: "ops", issuedAt: Date())
        let dir = TempDir()
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        try await store.rememberAnswer(signed, for: Self.user, from: .json(post: DevicePast.placeholderURL), fetch: .init(trustedKeys: keys))
        let flags = FeatureFlagProvider.forTesting(
            context: Self.user, store: store, fetch: .init(trustedKeys: keys), reachability: ManualReachability(false))
        defer { flags.shutdown() }
        #expect(flags.value(Self.newCheckout) && flags.snapshot.version == "signed-1")
        #expect(!flags.recentEvents.contains { $0.kind == .fallbackTampered })

        // Not signed by a trusted key: refused, nothing stored.
        let otherDir = TempDir()
        let other = LastKnownGoodStore(fileURL: otherDir.url("flags.lkg"))
        await #expect(throws: FetchError.self) {
            try await other.rememberAnswer(document, for: Self.user, from: .json(post: DevicePast.placeholderURL), fetch: .init(trustedKeys: keys))
        }
        #expect(FallbackClient(store: other, context: Self.user).snapshot.flags.isEmpty)
    }

    @Test(.hangLimit())
    func rememberedFlagdRulesAreEvaluatedForAContextNeverFetched() async throws {
        let rules = #"""
        {"flags": {"new_checkout": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "off",
          "targeting": {"if": [{"==": [{"var": "plan"}, "pro"]}, "on", "off"]}}}}
        """#
        let endpoint = FlagEndpoint.flagd(url: URL(string: "https://cdn.example.com/flagd.json")!)
        let dir = TempDir()
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        try await store.rememberAnswer(Array(rules.utf8), for: Self.user, from: endpoint)
        let pro = EvaluationContext(targetingKey: "someone-else", attributes: ["plan": "pro"])
        let flags = FeatureFlagProvider.forTesting(context: pro, store: store, endpoint: endpoint, reachability: ManualReachability(false))
        defer { flags.shutdown() }
        #expect(flags.value(Self.newCheckout) && flags.details(Self.newCheckout).source == .fallback)
    }

    @Test(.hangLimit())
    func anAnswerTheEndpointCannotReadIsRefusedAndNothingIsStored() async throws {
        let dir = TempDir()
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        await #expect(throws: FetchError.self) {
            try await store.rememberAnswer(Array("not json".utf8), for: Self.user, from: .json(post: DevicePast.placeholderURL))
        }
        #expect(FallbackClient(store: store, context: Self.user).snapshot.flags.isEmpty)
    }
}
