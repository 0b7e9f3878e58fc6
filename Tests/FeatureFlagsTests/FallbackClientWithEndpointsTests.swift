import FeatureFlags
import FeatureFlagsTesting
import FlagServer
import Foundation
import Testing
import TestSupport

@testable import FeatureFlags
@testable import FeatureFlagsFlagd
@testable import FeatureFlagsSigning

extension WallClockSensitive {
/// A `FallbackClient` given the app's endpoints and trusted keys reads the fallback file as the app's provider
/// does offline: held flagd rules evaluated for its context, and with trusted keys only what a
/// trusted key signed — and it never writes the file.
@Suite("A FallbackClient reading with the app's endpoints and keys")
struct FallbackClientWithEndpointsTests {
    typealias Signed = SignedFetchTests
    static let newCheckout = Signed.newCheckout


    /// What the fallback file holds, byte for byte.
    static func bytes(_ f: ProviderFixture) throws -> Data { try Data(contentsOf: f.fallbackURL) }

    @Test(.hangLimit())
    func whatTheOperatorSignedIsServedForTheContextAndForTheMostRecentOne() async throws {
        let f = try await Signed.signedStart()
        f.stop()
        for context in [auraPersonal, nil] {
            let client = FallbackClient(fileURL: f.fallbackURL, context: context, endpoints: [.json(post: f.server.flagsURL)], trustedKeys: Signed.keys)
            defer { client.shutdown() }
            #expect(client.value(Self.newCheckout) == true && client.snapshot.version == "signed-1")
            #expect(client.details(Self.newCheckout).source == .fallback)
            #expect(!client.recentEvents.contains { $0.kind == .fallbackTampered || $0.kind == .fallbackWarning }, "\(client.recentEvents)")
        }
    }

    @Test(.hangLimit(), arguments: SignedFetchTests.Tampering.allCases)
    func anEditedFileIsNotServedAndIsLeftAsItIs(_ tampering: SignedFetchTests.Tampering) async throws {
        let f = try await Signed.signedStart()
        f.stop()
        let stored = try #require(f.store.lastKnownGood(for: auraPersonal)?.snapshot)
        var edited = stored
        switch tampering {
        case .editedValues:
            edited = FlagSnapshot(
                values: ["new_checkout": false, "kill_switch": false], version: stored.version, fetchedAt: stored.fetchedAt,
                contextFingerprint: stored.contextFingerprint)
            edited.signature = stored.signature
        case .storedUnsigned:
            edited.signature = nil
        case .editedSignature:
            var envelope = try #require(stored.signature?.envelope)
            envelope[envelope.count - 3] ^= 1
            edited.signature = SignatureStamp(keyID: "ops-2026", issuedAt: stored.signature?.issuedAt, expiresAt: nil, envelope: envelope)
        case .editedStampTimes:
            let stamp = try #require(stored.signature)
            edited.signature = SignatureStamp(
                keyID: stamp.keyID, issuedAt: stamp.issuedAt, expiresAt: Date(timeIntervalSince1970: 4_000_000_000), envelope: stamp.envelope)
        }
        try LastKnownGoodStore(fileURL: f.fallbackURL).save(edited, etag: nil, for: auraPersonal)
        let before = try Self.bytes(f)

        // Without endpoints and keys the file is served as it is: the reason to give them.
        let trusting = FallbackClient(fileURL: f.fallbackURL, context: auraPersonal)
        #expect(trusting.details(Self.newCheckout).source == .fallback)
        trusting.shutdown()

        let client = FallbackClient(fileURL: f.fallbackURL, context: auraPersonal, endpoints: [.json(post: f.server.flagsURL)], trustedKeys: Signed.keys)
        defer { client.shutdown() }
        #expect(client.value(Self.newCheckout) == false && client.details(Self.newCheckout).source == .codeDefault)
        #expect(client.status == .ready)
        let event = try #require(client.recentEvents.first { $0.kind == .fallbackTampered })
        #expect(event.message?.hasPrefix("the stored snapshot for this context is not what a trusted key signed") == true, "\(event)")
        #expect(event.keptAt == nil, "nothing is set aside: the file is the app's")
        #expect(try Self.bytes(f) == before, "the file is left exactly as it was")
    }

    @Test(.hangLimit())
    func anIdentifyIsCheckedToo() async throws {
        let f = try await Signed.signedStart()
        f.stop()
        // Another context's values, planted unsigned.
        let other = EvaluationContext(targetingKey: "user-2")
        try LastKnownGoodStore(fileURL: f.fallbackURL).save(
            FlagSnapshot(values: ["new_checkout": true], contextFingerprint: other.fingerprint), etag: nil, for: other)
        let client = FallbackClient(fileURL: f.fallbackURL, context: auraPersonal, endpoints: [.json(post: f.server.flagsURL)], trustedKeys: Signed.keys)
        defer { client.shutdown() }
        #expect(client.details(Self.newCheckout).source == .fallback)
        client.identify(other)
        #expect(client.value(Self.newCheckout) == false && client.details(Self.newCheckout).source == .codeDefault)
        let event = try #require(client.recentEvents.last { $0.kind == .fallbackTampered })
        #expect(event.message?.contains("the stored snapshot carries no signature") == true, "\(event)")
        client.identify(auraPersonal)
        #expect(client.value(Self.newCheckout) == true && client.details(Self.newCheckout).source == .fallback)
    }

    @Test(.hangLimit())
    func unusableTrustedKeysServeNothingStored() async throws {
        let f = try await Signed.signedStart()
        f.stop()
        let client = FallbackClient(
            fileURL: f.fallbackURL, context: auraPersonal, endpoints: [.json(post: f.server.flagsURL)], trustedKeys: ["ops-2026": "not a key"])
        defer { client.shutdown() }
        #expect(client.details(Self.newCheckout).source == .codeDefault)
        let event = try #require(client.recentEvents.first { $0.kind == .fallbackTampered })
        #expect(event.message?.contains("the trusted keys are unusable") == true, "\(event)")
    }

    @Test(.hangLimit())
    func endpointsWithoutKeysCheckNothing() async throws {
        let f = try await Signed.signedStart()
        f.stop()
        try LastKnownGoodStore(fileURL: f.fallbackURL).save(
            FlagSnapshot(values: ["new_checkout": false], contextFingerprint: auraPersonal.fingerprint), etag: nil, for: auraPersonal)
        let client = FallbackClient(
            fileURL: f.fallbackURL, context: auraPersonal, endpoints: [.json(post: f.server.flagsURL)])
        defer { client.shutdown() }
        #expect(client.value(Self.newCheckout) == false && client.details(Self.newCheckout).source == .fallback)
        #expect(!client.recentEvents.contains { $0.kind == .fallbackTampered })
    }

    @Test(.hangLimit())
    func heldFlagdRulesAreEvaluatedForAContextNeverFetched() async throws {
        let server = try FlagServer(document: .seedExample)
        try server.serveFlagd(Array(Signed.flagdRules.utf8))
        let dir = TempDir()
        let url = server.baseURL.appendingPathComponent("flagd/flags.json")
        let first = FeatureFlagProvider(
            context: auraPersonal, fetcher: FlagFetcher(endpoint: .flagd(url: url)), store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")),
            reachability: ManualReachability(true), lifecycle: ManualLifecycle(foreground: true))
        #expect(await first.refresh().isSuccess)
        first.shutdown()
        server.stop()
        let someoneElse = EvaluationContext(targetingKey: "someone-else")
        // Without the endpoints, only what was evaluated for a fetched context is stored.
        let plain = FallbackClient(fileURL: dir.url("flags.lkg"), context: someoneElse)
        #expect(plain.details(Self.newCheckout).source == .codeDefault)
        plain.shutdown()
        let client = FallbackClient(fileURL: dir.url("flags.lkg"), context: someoneElse, endpoints: [.flagd(url: url)])
        defer { client.shutdown() }
        #expect(client.value(Self.newCheckout) == true && client.details(Self.newCheckout).source == .fallback)
        client.identify(auraPersonal)
        #expect(client.value(Self.newCheckout) == true && client.details(Self.newCheckout).source == .fallback)
        // No context: the most recent one's stored values, as they are.
        let unnamed = FallbackClient(fileURL: dir.url("flags.lkg"), endpoints: [.flagd(url: url)])
        #expect(unnamed.value(Self.newCheckout) == true)
        unnamed.shutdown()
    }

    @Test(.hangLimit())
    func valuesEvaluatedFromRulesNoLongerHeldAreNotServed() throws {
        // A stored evaluation, but no rules to verify it against (planted, or the rules were set
        // aside): a flagd app with trusted keys serves nothing of it.
        let dir = TempDir()
        try LastKnownGoodStore(fileURL: dir.url("flags.lkg")).save(
            FlagSnapshot(values: ["new_checkout": true], contextFingerprint: auraPersonal.fingerprint), etag: nil, for: auraPersonal)
        let client = FallbackClient(
            fileURL: dir.url("flags.lkg"), context: auraPersonal, endpoints: [.flagd(url: URL(string: "http://127.0.0.1:9/flags.json")!)],
            trustedKeys: Signed.keys)
        defer { client.shutdown() }
        #expect(client.details(Self.newCheckout).source == .codeDefault)
        let event = try #require(client.recentEvents.first { $0.kind == .fallbackTampered })
        #expect(event.message?.contains("it was evaluated from rules that cannot be verified") == true, "\(event)")
    }

    /// Given the merged identity as its context, the client makes the merge again from the
    /// members' signed answers — the values the app's provider serves — never from the stored
    /// merge, which no key signed (here forged); without the identity it cannot.
    @Test(.hangLimit())
    func aMergedIdentityIsMadeAgainFromItsMembersSignedAnswers() async throws {
        let dir = TempDir()
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let operators = try await Signed.storeSignedMerge(server, dir)
        #expect(operators != "none")
        let identity = ContextMerge.identity(of: Signed.planContexts)
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        try store.save(
            FlagSnapshot(values: ["plan_themeColor": "#000000", "kill_switch": false], version: "forged"), etag: nil, for: identity)
        let before = try Data(contentsOf: dir.url("flags.lkg"))
        let client = FallbackClient(store: store, context: identity, endpoints: [.json(post: server.flagsURL)], trustedKeys: Signed.keys)
        #expect(client.value(Signed.theme) == operators, "made again from the members' signed answers")
        #expect(client.details(Signed.theme).source == .fallback)
        #expect(!client.recentEvents.contains { $0.kind == .fallbackTampered || $0.kind == .fallbackWarning })
        // A member's own signed answer is served, and the merge again on an identify.
        client.identify(Signed.planContexts[1])
        #expect(client.details(Signed.theme).source == .fallback)
        client.identify(identity)
        #expect(client.value(Signed.theme) == operators)
        client.shutdown()
        #expect(try Data(contentsOf: dir.url("flags.lkg")) == before, "the client wrote the file")
        // Without endpoints the stored merge is served as the app wrote it (here, forged).
        let plain = FallbackClient(store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), context: identity)
        #expect(plain.value(Signed.theme) == "#000000")
        plain.shutdown()
    }

    /// A member whose stored answer fails the check: nothing of the merge is served, and the
    /// event says which part failed; a member with nothing stored: defaults and a warning.
    @Test(.hangLimit())
    func aMergedIdentityWithAnEditedOrMissingMemberServesDefaults() async throws {
        let dir = TempDir()
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        _ = try await Signed.storeSignedMerge(server, dir)
        let identity = ContextMerge.identity(of: Signed.planContexts)
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        let member = try #require(store.lastKnownGood(for: Signed.planContexts[1]))
        var edited = member.snapshot
        edited.signature = nil
        try store.save(edited, etag: member.etag, for: Signed.planContexts[1])
        let client = FallbackClient(fileURL: dir.url("flags.lkg"), context: identity, endpoints: [.json(post: server.flagsURL)], trustedKeys: Signed.keys)
        #expect(client.details(Signed.theme).source == .codeDefault)
        let event = try #require(client.recentEvents.first { $0.kind == .fallbackTampered })
        #expect(event.message?.contains("a member of this merged identity") == true, "\(event)")
        client.shutdown()
        #expect(LastKnownGoodStore(fileURL: dir.url("flags.lkg")).lastKnownGood(for: Signed.planContexts[1]) != nil, "set aside by a client")
        // A third member never fetched: nothing to merge it from.
        let wider = ContextMerge.identity(of: [Signed.planContexts[0], EvaluationContext(targetingKey: "user-9")])
        let missing = FallbackClient(fileURL: dir.url("flags.lkg"), context: wider, endpoints: [.json(post: server.flagsURL)], trustedKeys: Signed.keys)
        #expect(missing.details(Signed.theme).source == .codeDefault)
        #expect(missing.recentEvents.contains { $0.kind == .fallbackWarning && $0.message?.contains("not every member") == true })
        missing.shutdown()
    }

    /// Held flagd rules and a merged identity: each member evaluated, then merged — not the
    /// rules evaluated once for the identity's own synthetic context.
    @Test(.hangLimit())
    func aMergedIdentityOfAFlagdAppIsEvaluatedMemberByMember() async throws {
        let server = try FlagServer(document: .seedExample)
        try server.serveFlagd(Array(Self.venueRules.utf8))
        defer { server.stop() }
        let dir = TempDir()
        let url = server.baseURL.appendingPathComponent("flagd/flags.json")
        let user = EvaluationContext(targetingKey: "user-1")
        let venue = EvaluationContext(targetingKey: "venue-7", attributes: ["venue": "venue-7"])
        let app = FeatureFlagProvider(
            context: user, fetcher: FlagFetcher(endpoint: .flagd(url: url)), store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")),
            reachability: ManualReachability(true), lifecycle: ManualLifecycle(foreground: true))
        #expect(await app.refresh().isSuccess)
        app.identify(merging: [venue, user])  // the venue ranks first: its value wins
        #expect(await app.refresh().isSuccess)
        let served = app.value(Self.venueTheme)
        app.shutdown()
        #expect(served == "venue", "the venue member's rule matched")
        let identity = ContextMerge.identity(of: [venue, user])
        let client = FallbackClient(fileURL: dir.url("flags.lkg"), context: identity, endpoints: [.flagd(url: url)])
        defer { client.shutdown() }
        #expect(client.value(Self.venueTheme) == served && client.details(Self.venueTheme).source == .fallback)
    }

    /// A flagd app with trusted keys and a merged identity: verified rules are evaluated for
    /// each member; edited rules serve nothing (and say so); no rules held serves nothing either.
    @Test(.hangLimit())
    func aMergedIdentityOfASignedFlagdAppServesOnlyVerifiedRules() async throws {
        let dir = TempDir()
        let url = try await Signed.storeSignedFlagdRules(in: dir)
                let identity = ContextMerge.identity(of: [auraPersonal, EvaluationContext(targetingKey: "someone-else")])
        let verified = FallbackClient(fileURL: dir.url("flags.lkg"), context: identity, endpoints: [.flagd(url: url)], trustedKeys: Signed.keys)
        #expect(verified.value(Self.newCheckout) == true && verified.details(Self.newCheckout).source == .fallback)
        verified.shutdown()

        try Signed.editHeldRules(in: dir)
        let edited = FallbackClient(fileURL: dir.url("flags.lkg"), context: identity, endpoints: [.flagd(url: url)], trustedKeys: Signed.keys)
        #expect(edited.details(Self.newCheckout).source == .codeDefault)
        #expect(edited.recentEvents.contains { $0.kind == .fallbackTampered && $0.message?.contains("flag rules") == true })
        edited.shutdown()

        let empty = TempDir()
        try LastKnownGoodStore(fileURL: empty.url("flags.lkg")).save(
            FlagSnapshot(values: ["new_checkout": true], contextFingerprint: identity.fingerprint), etag: nil, for: identity)
        let none = FallbackClient(fileURL: empty.url("flags.lkg"), context: identity, endpoints: [.flagd(url: url)], trustedKeys: Signed.keys)
        #expect(none.details(Self.newCheckout).source == .codeDefault, "a stored merge of an evaluation nothing verifies")
        #expect(none.recentEvents.contains { $0.kind == .fallbackWarning && $0.message?.contains("no flag rules are held") == true })
        none.shutdown()
    }

    static let venueTheme = FlagKey("venue_theme", default: "none")
    static let venueRules = #"""
    {"flags": {
      "venue_theme": {"state": "ENABLED", "variants": {"plain": "plain", "venue": "venue"}, "defaultVariant": "plain",
        "targeting": {"if": [{"==": [{"var": "venue"}, "venue-7"]}, "venue", null]}},
      "kill_switch": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "off"}
    }}
    """#

    @Test(.hangLimit())
    func heldFlagdRulesAreVerifiedThenEvaluatedForTheContext() async throws {
        let dir = TempDir()
        let url = try await Signed.storeSignedFlagdRules(in: dir)

        // Verified rules: evaluated for this context, and for one never fetched.
                let client = FallbackClient(fileURL: dir.url("flags.lkg"), context: auraPersonal, endpoints: [.flagd(url: url)], trustedKeys: Signed.keys)
        #expect(client.value(Self.newCheckout) == true && client.details(Self.newCheckout).source == .fallback)
        client.identify(EvaluationContext(targetingKey: "someone-else"))
        #expect(client.value(Self.newCheckout) == true && client.details(Self.newCheckout).source == .fallback)
        #expect(!client.recentEvents.contains { $0.kind == .fallbackTampered })
        client.shutdown()

        // No context to evaluate them for: defaults, and a warning that says so.
        let unnamed = FallbackClient(fileURL: dir.url("flags.lkg"), endpoints: [.flagd(url: url)], trustedKeys: Signed.keys)
        #expect(unnamed.details(Self.newCheckout).source == .codeDefault)
        #expect(unnamed.recentEvents.contains { $0.kind == .fallbackWarning && $0.message?.contains("no context") == true })
        unnamed.shutdown()

        // The rules edited under their old signature: nothing stored is served, the file stays.
        try Signed.editHeldRules(in: dir)
        let before = try Data(contentsOf: dir.url("flags.lkg"))
        let tampered = FallbackClient(fileURL: dir.url("flags.lkg"), context: auraPersonal, endpoints: [.flagd(url: url)], trustedKeys: Signed.keys)
        defer { tampered.shutdown() }
        #expect(tampered.value(Self.newCheckout) == false && tampered.details(Self.newCheckout).source == .codeDefault)
        let messages = tampered.recentEvents.filter { $0.kind == .fallbackTampered }.compactMap(\.message)
        #expect(messages.contains { $0.hasPrefix("the flag rules held for evaluation on the device are not what a trusted key signed") }, "\(messages)")
        #expect(try Data(contentsOf: dir.url("flags.lkg")) == before)
    }
}
}

