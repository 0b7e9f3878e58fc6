import FeatureFlags
import FeatureFlagsServices
import FeatureFlagsTesting
import FlagServer
import Foundation
import Testing
import TestSupport

@testable import FeatureFlags
@testable import FeatureFlagsFlagd
@testable import FeatureFlagsSigning

// Seconds of curve arithmetic in a debug build under ThreadSanitizer: kept apart from the
// wall-clock tests (WallClockSensitive runs its suites one after the other), whose deadlines
// this CPU would otherwise steal.
extension WallClockSensitive {
/// Signed flags over real loopback HTTP: with trusted keys, a provider serves only documents
/// the operator signed. Every refusal — unsigned, a bad signature, an unknown key id, an
/// unusable configured key — fails the fetch with `signature_rejected`, keeps what is served
/// and stored, and a kill switch inside a refused document does not apply; a signed kill does.
@Suite("Signed flags over loopback")
struct SignedFetchTests {
    static let operatorSeed = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 41 &+ 3) }
    static let forgerSeed = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 23 &+ 9) }
    /// The operator's key trusted; a generous budget (the provider's test clock holds it; the
    /// transport's real-time backstop follows it): signing and verifying in a debug build
    /// under ThreadSanitizer, on a loaded machine, takes far longer than in an app.
    static var trusting: FlagFetcher.Configuration {
        .init(budget: .seconds(20 * TestTiming.scale), trustedKeys: keys)
    }
    /// The operator's key, by key id.
    static var keys: [String: String] { ["ops-2026": SigningKeys.publicKeyPEM(Ed25519.publicKey(seed: operatorSeed))] }
    static let newCheckout = FlagKey("new_checkout", default: false)
    /// flagd rules serving `new_checkout` on to everyone.
    static let flagdRules = #"{"flags": {"new_checkout": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "on"}}}"#

    static func document(newCheckout: Bool, kill: Bool = false, version: String) -> ServerDocument {
        var document = ServerDocument.seedExample
        document.base.flags["new_checkout"] = FlagEntry(value: .bool(newCheckout))
        document.base.flags["kill_switch"] = FlagEntry(value: .bool(kill))
        document.base.version = version
        return document
    }

    /// A provider trusting the operator's key, holding a first document the operator signed.
    static func signedStart() async throws -> ProviderFixture {
        let server = try FlagServer(document: document(newCheckout: true, version: "signed-1"))
        try server.signAnswers(privateKeyPEM: SigningKeys.privateKeyPEM(operatorSeed), keyID: "ops-2026")
        let f = try ProviderFixture(server: server, fetch: trusting)
        let outcome = await f.provider.refresh()
        #expect(outcome.isSuccess, "\(outcome)")
        #expect(f.provider.value(newCheckout) == true && f.provider.snapshot.version == "signed-1")
        return f
    }

    @Test(.hangLimit())
    func aSignedDocumentIsServedAndStored() async throws {
        let f = try await Self.signedStart()
        defer { f.stop() }
        #expect(f.store.lastKnownGood(for: auraPersonal)?.snapshot.version == "signed-1")
        #expect(!f.provider.recentEvents.contains { $0.kind == .signatureRejected })
    }

    enum Refusal: String, CaseIterable {
        case unsigned, forgedSignature, unknownKeyID, kidlessForgery
    }

    @Test(.hangLimit(), arguments: Refusal.allCases)
    func aRefusedDocumentChangesNothingAndSaysWhy(_ refusal: Refusal) async throws {
        let f = try await Self.signedStart()
        defer { f.stop() }
        f.server.document = Self.document(newCheckout: false, version: "tampered")
        switch refusal {
        case .unsigned: try f.server.signAnswers(privateKeyPEM: nil)
        case .forgedSignature: try f.server.signAnswers(privateKeyPEM: SigningKeys.privateKeyPEM(Self.forgerSeed), keyID: "ops-2026")
        case .unknownKeyID: try f.server.signAnswers(privateKeyPEM: SigningKeys.privateKeyPEM(Self.operatorSeed), keyID: "stranger")
        case .kidlessForgery: try f.server.signAnswers(privateKeyPEM: SigningKeys.privateKeyPEM(Self.forgerSeed), keyID: nil)
        }
        let outcome = await f.provider.refresh()
        guard case .failed(let error) = outcome else {
            Issue.record("expected a failed fetch, got \(outcome)")
            return
        }
        #expect(error.kind == .signatureRejected)
        let expected: String =
            switch refusal {
            case .unsigned: "not a signed document (JWS)"
            case .forgedSignature: #"bad signature (key "ops-2026")"#
            case .unknownKeyID: #"unknown key id "stranger""#
            case .kidlessForgery: "bad signature (no trusted key verifies it)"
            }
        #expect(error.description.contains(expected), "\(error)")
        #expect(f.provider.value(Self.newCheckout) == true && f.provider.snapshot.version == "signed-1", "the Last-Known-Good stays")
        #expect(f.store.lastKnownGood(for: auraPersonal)?.snapshot.version == "signed-1", "nothing on disk changes")
        let event = f.provider.recentEvents.first { $0.kind == .signatureRejected }
        #expect(event?.message?.contains(expected) == true, "\(String(describing: event))")
    }

    @Test(.hangLimit())
    func aForgedKillDoesNotKillASignedOneDoes() async throws {
        let f = try await Self.signedStart()
        defer { f.stop() }
        // Someone between the operator and the app turns the kill switch on (or lifts one):
        // the document is not the operator's, so its kill switch is not read.
        f.server.document = Self.document(newCheckout: true, kill: true, version: "forged-kill")
        try f.server.signAnswers(privateKeyPEM: SigningKeys.privateKeyPEM(Self.forgerSeed), keyID: "ops-2026")
        _ = await f.provider.refresh()
        #expect(!f.provider.isKillSwitchActive && f.provider.value(Self.newCheckout) == true)
        #expect(!f.provider.recentEvents.contains { $0.kind == .killSwitch && $0.killSwitchActive == true })
        // The operator's own kill applies at once.
        try f.server.signAnswers(privateKeyPEM: SigningKeys.privateKeyPEM(Self.operatorSeed), keyID: "ops-2026")
        #expect(await f.provider.refresh().isSuccess)
        #expect(f.provider.isKillSwitchActive && f.provider.value(Self.newCheckout) == false)
    }

    /// A signed answer the schema rejects, carrying the kill switch: the kill applies and holds
    /// across a relaunch, and the signed values stored before it are still there, intact — not
    /// rewritten without their signature (which the next launch would set aside as tampered).
    @Test(.hangLimit())
    func aSignedKillInARejectedDocumentHoldsAndKeepsTheSignedValuesStored() async throws {
        let server = try FlagServer(document: Self.document(newCheckout: true, version: "signed-1"))
        try server.signAnswers(privateKeyPEM: SigningKeys.privateKeyPEM(Self.operatorSeed), keyID: "ops-2026")
        let dir = TempDir()
        let schema = FeatureFlagProvider.Configuration(schema: .seedExample)
        let f = try ProviderFixture(server: server, dir: dir, configuration: schema, fetch: Self.trusting)
        #expect(await f.provider.refresh().isSuccess)
        var rejected = ServerDocument.seedDefaults(["plan_themeColor": "#12345G", "kill_switch": true, "new_checkout": true])
        rejected.base.version = "signed-2"
        server.document = rejected
        guard case .rejected = await f.provider.refresh() else {
            Issue.record("the schema should reject the second document: \(f.provider.recentEvents.map(\.description))")
            f.stop()
            return
        }
        #expect(f.provider.isKillSwitchActive)
        f.stop()
        // Relaunch offline: the kill holds, and the first signed document is still stored and intact.
        let relaunch = try ProviderFixture(reachable: false, server: server, dir: dir, configuration: schema, fetch: Self.trusting)
        defer { relaunch.stop() }
        #expect(relaunch.provider.isKillSwitchActive)
        #expect(!relaunch.provider.recentEvents.contains { $0.kind == .fallbackTampered })
        let stored = relaunch.store.lastKnownGood(for: auraPersonal)?.snapshot
        #expect(stored?.version == "signed-1" && stored?.signature != nil)
        #expect(stored?.flags["new_checkout"]?.value == true)
    }

    @Test(.hangLimit())
    func anUnusableTrustedKeyFailsEveryFetchAndNamesIt() async throws {
        let server = try FlagServer(document: Self.document(newCheckout: true, version: "v1"))
        let f = try ProviderFixture(server: server, fetch: .init(trustedKeys: ["broken": "not a key"]))
        defer { f.stop() }
        guard case .failed(let error) = await f.provider.refresh() else {
            Issue.record("expected a failed fetch")
            return
        }
        #expect(error.kind == .signatureRejected && error.description.contains(#"trusted key "broken" is not an Ed25519 public key"#))
        #expect(f.provider.value(Self.newCheckout) == false, "nothing was served")
    }

    @Test(.hangLimit())
    func rulesEvaluatedOnTheDeviceAreVerifiedToo() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let rules = Self.flagdRules
        try server.serveFlagd(Array(rules.utf8))
        try server.signAnswers(privateKeyPEM: SigningKeys.privateKeyPEM(Self.operatorSeed), keyID: "ops-2026")
        let url = server.baseURL.appendingPathComponent("flagd/flags.json")
        let fetcher = FlagFetcher(endpoint: .flagd(url: url), configuration: Self.trusting)
        defer { fetcher.shutdown() }
        guard case .fetched(let snapshot, _, _) = await fetcher.fetch(auraPersonal, ifNoneMatch: nil) else {
            Issue.record("expected the signed rules to be evaluated")
            return
        }
        #expect(snapshot.flags["new_checkout"]?.value == true)
        try server.signAnswers(privateKeyPEM: nil)
        guard case .failed(let error) = await fetcher.fetch(auraPersonal, ifNoneMatch: nil) else {
            Issue.record("expected unsigned rules to be refused")
            return
        }
        #expect(error.kind == .signatureRejected)
    }

    // MARK: Rollback and freeze

    static func signAs(_ server: FlagServer, issuedAt: Date?, expiresAt: Date? = nil) throws {
        try server.signAnswers(
            privateKeyPEM: SigningKeys.privateKeyPEM(operatorSeed), keyID: "ops-2026", issuedAt: issuedAt, expiresAt: expiresAt)
    }

    @Test(.hangLimit())
    func anOlderSignedDocumentIsRefusedAsARollbackANewerOneIsServed() async throws {
        let server = try FlagServer(document: Self.document(newCheckout: true, version: "march"))
        let march = Date(timeIntervalSince1970: 1_772_323_200)
        try Self.signAs(server, issuedAt: march)
        let f = try ProviderFixture(server: server, fetch: Self.trusting)
        defer { f.stop() }
        #expect(await f.provider.refresh().isSuccess)
        #expect(f.store.lastKnownGood(for: auraPersonal)?.snapshot.signature?.issuedAt == march, "the signing time is stored")

        // A genuine but older signed document, replayed: refused, what is held stays.
        server.document = Self.document(newCheckout: false, version: "february")
        try Self.signAs(server, issuedAt: march - 86_400 * 28)
        guard case .failed(let error) = await f.provider.refresh() else {
            Issue.record("expected the rollback to be refused")
            return
        }
        #expect(error.kind == .signatureRejected && error.description.contains("rollback: the document was signed at 2026-02-01T00:00:00Z"))
        #expect(f.provider.value(Self.newCheckout) == true && f.provider.snapshot.version == "march")
        #expect(f.provider.recentEvents.contains { $0.kind == .signatureRejected && $0.message?.hasPrefix("rollback:") == true })
        // A document without a signing time while the one held has one: refused too.
        let timeless = JWS.sign(Array(#"{"flags": {}}"#.utf8), seed: Self.operatorSeed, keyID: "ops-2026")
        #expect(throws: FetchError.self) {
            try FlagFetcher.checkNotRolledBack(try JWS.verify(timeless, trusting: TrustedKeys(Self.trusting.trustedKeys)).get().issuedAt, heldSince: march)
        }
        // The operator's deliberate rollback: the old values, signed now.
        server.document = Self.document(newCheckout: false, version: "march-rollback")
        try Self.signAs(server, issuedAt: march + 3_600)
        #expect(await f.provider.refresh().isSuccess)
        #expect(f.provider.value(Self.newCheckout) == false && f.provider.snapshot.version == "march-rollback")
    }

    /// A provider serving a document its operator signed as current for one minute of the
    /// provider's clock.
    private static func signedForOneMinute() async throws -> ProviderFixture {
        let f = try ProviderFixture(server: try FlagServer(document: Self.document(newCheckout: true, version: "v1")), fetch: Self.trusting)
        do {
            try Self.signAs(f.server, issuedAt: f.start, expiresAt: f.start + 60)
        } catch {
            f.stop()
            throw error
        }
        #expect(await f.provider.refresh().isSuccess)
        #expect(f.provider.status == .ready)
        return f
    }

    @Test(.hangLimit())
    func aSignedDocumentPastItsExpiryIsStaleAndSaysSo() async throws {
        let f = try await Self.signedForOneMinute()
        defer { f.stop() }
        // Nothing newer comes (the service is replaying it, or cut off): past its expiry the
        // values are still served, but as stale.
        f.server.fault = .closeConnection
        f.clock.advance(by: .seconds(120))
        _ = await f.provider.refresh()
        #expect(f.provider.status == .stale, "\(f.provider.status)")
        #expect(f.provider.recentEvents.contains { $0.kind == .stale })
        #expect(f.provider.value(Self.newCheckout) == true, "stale values are still the operator's")
        #expect(f.provider.details(Self.newCheckout).reason == .stale)
    }

    @Test(.hangLimit())
    func aSignedDocumentConfirmedByA304PastItsExpiryIsStaleToo() async throws {
        let f = try await Self.signedForOneMinute()
        defer { f.stop() }
        let server = f.server
        // The service keeps answering "not modified" to the document's tag (it was never signed
        // again): a 304 is not signed, so it cannot renew the signed expiry.
        f.clock.advance(by: .seconds(120))
        #expect(await f.provider.refresh() == .unchanged)
        #expect(server.requests.last?.status == 304)
        #expect(f.provider.snapshot.signature?.expiresAt == f.start + 60, "the served snapshot keeps its stamp")
        #expect(f.provider.status == .stale, "\(f.provider.status)")
        #expect(f.provider.details(Self.newCheckout).reason == .stale)
        // Signed again by the operator: fresh.
        try Self.signAs(server, issuedAt: f.start + 120, expiresAt: f.start + 600)
        server.document = Self.document(newCheckout: true, version: "v2")
        #expect(await f.provider.refresh().isSuccess)
        #expect(f.provider.status == .ready)
    }

    @Test(.hangLimit())
    func aSignedExpiryThatPassesBetweenPollsIsStaleWhenItPasses() async throws {
        let f = try await Self.signedForOneMinute()
        defer { f.stop() }
        let requests = f.server.requestCount
        let events = f.provider.recentEvents.count
        let loop = f.run()
        defer { loop.cancel() }
        // The run loop's own first fetch, then its sleep: until the expiry (a minute), before
        // the next poll (five, with jitter).
        #expect(await eventually { f.server.requestCount == requests + 1 && f.clock.sleeperDeadlines.count == 1 })
        let expiry = f.clock.now.advanced(by: .seconds(60))
        #expect(await eventually { f.clock.sleeperDeadlines.first.map { $0 > expiry && $0 < expiry.advanced(by: .seconds(1)) } == true },
                "\(f.clock.sleeperDeadlines)")
        f.clock.advance(by: .seconds(61))
        #expect(await eventually { f.provider.status == .stale }, "\(f.provider.status)")
        #expect(f.provider.details(Self.newCheckout).reason == .stale)
        #expect(f.provider.value(Self.newCheckout) == true, "still the operator's values")
        #expect(f.provider.recentEvents.dropFirst(events).filter { $0.kind == .stale }.count == 1)
        #expect(f.server.requestCount == requests + 1, "no fetch for the expiry")
        // The poll planned before comes at its time (at most 330 s after the fetch, 269 s from
        // here), not a whole interval (at least 270 s) after the expiry.
        #expect(await eventually { f.clock.sleeperDeadlines.count == 1 })
        let poll = try #require(f.clock.sleeperDeadlines.first)
        #expect(f.clock.now.duration(to: poll) < .seconds(270), "\(f.clock.now.duration(to: poll))")
        f.clock.advance(by: f.clock.now.duration(to: poll))
        #expect(await eventually { f.server.requestCount == requests + 2 })
    }

    /// Two plans of one user, merged (`identify(merging:)`), fetched from a service that signs.
    static let planContexts = [
        EvaluationContext(targetingKey: "user-1", partner: "zenithsat", planTier: "business"),
        EvaluationContext(targetingKey: "user-1", partner: "zenithsat", planTier: "personal"),
    ]
    static let theme = FlagKey("plan_themeColor", default: "none")

    /// A provider on `dir`'s fallback file, trusting the operator's key, identified with both plans.
    static func mergedProvider(_ server: FlagServer, _ dir: TempDir, reachable: Bool) throws -> ProviderFixture {
        let f = try ProviderFixture(context: planContexts[0], reachable: reachable, server: server, dir: dir, fetch: trusting)
        f.provider.identify(merging: planContexts)
        return f
    }

    /// A first launch that fetches both plans, signed, into `dir`'s fallback file; the theme
    /// the merge served.
    static func storeSignedMerge(_ server: FlagServer, _ dir: TempDir) async throws -> String {
        try signAs(server, issuedAt: Date(timeIntervalSince1970: 1_772_323_200))
        let online = try mergedProvider(server, dir, reachable: true)
        defer { online.provider.shutdown() }
        #expect(await online.provider.refresh().isSuccess)
        return online.provider.value(theme)
    }

    @Test(.hangLimit())
    func aMergedIdentityIsServedFromItsMembersSignedAnswersNotFromAStoredMerge() async throws {
        let dir = TempDir()
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let operators = try await Self.storeSignedMerge(server, dir)
        #expect(operators != "none")
        // Someone with the file writes a merge of their own under the merged identity.
        let identity = ContextMerge.identity(of: Self.planContexts)
        try LastKnownGoodStore(fileURL: dir.url("flags.lkg")).save(
            FlagSnapshot(values: ["plan_themeColor": "#000000", "kill_switch": false], version: "forged"), etag: nil, for: identity)
        let offline = try Self.mergedProvider(server, dir, reachable: false)
        defer { offline.provider.shutdown() }
        #expect(offline.provider.value(Self.theme) == operators, "made again from the members' signed answers")
        #expect(offline.provider.details(Self.theme).source == .fallback)
        #expect(!offline.provider.recentEvents.contains { $0.kind == .fallbackTampered })
    }

    @Test(.hangLimit())
    func aMergedIdentityOfSignedAnswersIsStalePastTheirExpiry() async throws {
        let dir = TempDir()
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let f = try Self.mergedProvider(server, dir, reachable: true)
        defer { f.stop() }
        try Self.signAs(server, issuedAt: f.start, expiresAt: f.start + 60)
        #expect(await f.provider.refresh().isSuccess)
        #expect(f.provider.status == .ready)
        #expect(f.provider.snapshot.signature?.expiresAt == f.start + 60, "the merge carries its members' expiry")
        // Nothing newer: both members answer 304 past the expiry.
        f.clock.advance(by: .seconds(120))
        #expect(await f.provider.refresh() == .unchanged)
        #expect(f.provider.status == .stale, "\(f.provider.status)")
        #expect(f.provider.details(Self.theme).reason == .stale)
    }

    @Test(.hangLimit())
    func aMergedIdentityWhoseMemberWasEditedServesDefaultsAndSaysSo() async throws {
        let dir = TempDir()
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        _ = try await Self.storeSignedMerge(server, dir)
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        let member = try #require(store.lastKnownGood(for: Self.planContexts[1]), "the member's signed answer is stored")
        #expect(member.snapshot.signature != nil && member.etag != nil)
        var edited = member.snapshot
        edited.signature = nil
        try store.save(edited, etag: member.etag, for: Self.planContexts[1])
        let offline = try Self.mergedProvider(server, dir, reachable: false)
        defer { offline.provider.shutdown() }
        #expect(offline.provider.value(Self.theme) == "none", "nothing unproven is served")
        #expect(offline.provider.details(Self.theme).source == .codeDefault)
        #expect(await eventually { offline.provider.recentEvents.contains { $0.kind == .fallbackTampered } })
        #expect(await eventually { LastKnownGoodStore(fileURL: dir.url("flags.lkg")).lastKnownGood(for: Self.planContexts[1]) == nil },
                "the edited member is set aside")
    }

    @Test(.hangLimit())
    func aNotModifiedAnswerNeverConfirmsStoredValuesThatFailTheCheck() async throws {
        let dir = TempDir()
        let server = try FlagServer(document: Self.document(newCheckout: false, version: "signed-1"))
        defer { server.stop() }
        try Self.signAs(server, issuedAt: Date(timeIntervalSince1970: 1_772_323_200))
        let first = try ProviderFixture(server: server, dir: dir, fetch: Self.trusting)
        #expect(await first.provider.refresh().isSuccess)
        first.provider.shutdown()
        // Someone edits the stored values, keeping their signature and tag.
        let file = dir.url("flags.lkg")
        let stored = try #require(LastKnownGoodStore(fileURL: file).lastKnownGood(for: auraPersonal))
        var flags = stored.snapshot.flags
        flags["new_checkout"] = FlagEntry(value: .bool(true))
        var edited = FlagSnapshot(flags: flags, version: stored.snapshot.version, fetchedAt: stored.snapshot.fetchedAt, ttl: stored.snapshot.ttl,
                                  contextFingerprint: stored.snapshot.contextFingerprint)
        edited.signature = stored.snapshot.signature
        try LastKnownGoodStore(fileURL: file).save(edited, etag: stored.etag, for: auraPersonal)
        // The next launch starts with another context, then identifies this one: the check
        // fails, and setting the values aside waits its turn on the provider's I/O queue (held
        // here, as a burst of writes would hold it) — they are still in the store meanwhile.
        let provider = try ProviderFixture(context: auraBusiness, server: server, dir: dir, fetch: Self.trusting).provider
        defer { provider.shutdown() }
        let ioHeld = DispatchSemaphore(value: 0)
        defer { ioHeld.signal() }
        provider.io.async { _ = ioHeld.wait(timeout: TestTiming.waitDeadline) }
        provider.identify(auraPersonal)
        #expect(provider.value(Self.newCheckout) == false, "not served at the identify")
        #expect(provider.store.lastKnownGood(for: auraPersonal)?.snapshot.flags["new_checkout"]?.value == true, "not yet set aside")
        // The service has not changed: it answers the stored tag with 304. That must not make
        // the edited values current.
        let requests = server.requestCount
        guard case .failed(let error) = await provider.refresh() else {
            Issue.record("a 304 confirmed stored values that fail the check")
            return
        }
        #expect(error.kind == .signatureRejected && error.description.contains("\"not modified\" to stored values that fail the check"), "\(error)")
        #expect(provider.value(Self.newCheckout) == false, "still not served")
        #expect(provider.recentEvents.contains { $0.kind == .signatureRejected })
        #expect(server.requests.dropFirst(requests).map(\.status) == [304])
        // Once they are set aside, the retry asks without their tag and gets the signed values.
        ioHeld.signal()
        #expect(await eventually { provider.store.lastKnownGood(for: auraPersonal) == nil })
        #expect(await eventually { provider.recentEvents.contains { $0.kind == .fallbackTampered } })
        #expect(await provider.refresh().isSuccess)
        #expect(provider.value(Self.newCheckout) == false && provider.status == .ready)
        #expect(server.requests.dropFirst(requests).map(\.status) == [304, 200], "\(server.requests.map(\.status))")
    }

    @Test func theStampSurvivesTheStore() throws {
        let dir = TempDir()
        var snapshot = FlagSnapshot(values: ["a": true], version: "v", fetchedAt: Date(timeIntervalSince1970: 1_790_000_000), contextFingerprint: "ctx")
        snapshot.signature = SignatureStamp(
            keyID: "ops-2026", issuedAt: Date(timeIntervalSince1970: 1_790_000_000), expiresAt: Date(timeIntervalSince1970: 1_790_086_400))
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        try store.save(snapshot, etag: nil, for: EvaluationContext(targetingKey: "u"))
        let reloaded = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        #expect(reloaded.lastKnownGood(for: EvaluationContext(targetingKey: "u"))?.snapshot.signature == snapshot.signature)
        #expect(reloaded.lastKnownGood(for: EvaluationContext(targetingKey: "u"))?.snapshot.isExpired(at: Date(timeIntervalSince1970: 1_790_086_400)) == true)
    }

    // MARK: Signed at rest

    @Test(.hangLimit())
    func anIntactSignedFallbackIsServedOfflineAtTheNextLaunch() async throws {
        let f = try await Self.signedStart()
        f.stop()
        let relaunch = try ProviderFixture(reachable: false, server: f.server, dir: f.dir, fetch: Self.trusting)
        defer { relaunch.stop() }
        #expect(relaunch.provider.value(Self.newCheckout) == true && relaunch.provider.snapshot.version == "signed-1")
        #expect(!relaunch.provider.recentEvents.contains { $0.kind == .fallbackTampered })
    }

    enum Tampering: String, CaseIterable {
        case editedValues, storedUnsigned, editedSignature, editedStampTimes
    }

    @Test(.hangLimit(), arguments: Tampering.allCases)
    func anEditedFallbackIsSetAsideNeverServed(_ tampering: Tampering) async throws {
        let f = try await Self.signedStart()
        f.stop()
        // Someone who can write the app's container rewrites the stored snapshot (and its
        // checksums): new values under the old signature, no signature, or a broken one.
        let stored = try #require(f.store.lastKnownGood(for: auraPersonal)?.snapshot)
        var edited = FlagSnapshot(
            values: ["new_checkout": false, "kill_switch": false], version: stored.version, fetchedAt: stored.fetchedAt,
            contextFingerprint: stored.contextFingerprint)
        switch tampering {
        case .editedValues: edited.signature = stored.signature
        case .storedUnsigned: edited.signature = nil
        case .editedSignature:
            edited = stored
            var envelope = try #require(stored.signature?.envelope)
            envelope[envelope.count - 3] ^= 1
            edited.signature = SignatureStamp(keyID: "ops-2026", issuedAt: stored.signature?.issuedAt, expiresAt: nil, envelope: envelope)
        case .editedStampTimes:
            // The signed answer intact, its recorded expiry pushed out (to keep stale values fresh).
            edited = stored
            let stamp = try #require(stored.signature)
            edited.signature = SignatureStamp(
                keyID: stamp.keyID, issuedAt: stamp.issuedAt, expiresAt: Date(timeIntervalSince1970: 4_000_000_000), envelope: stamp.envelope)
        }
        try LastKnownGoodStore(fileURL: f.fallbackURL).save(edited, etag: nil, for: auraPersonal)

        let relaunch = try ProviderFixture(reachable: false, server: f.server, dir: f.dir, fetch: Self.trusting)
        defer { relaunch.stop() }
        #expect(relaunch.provider.value(Self.newCheckout) == false, "the code default, not the edited or stored value")
        #expect(relaunch.provider.details(Self.newCheckout).source == .codeDefault)
        let event = try #require(relaunch.provider.recentEvents.first { $0.kind == .fallbackTampered })
        #expect(event.message?.hasPrefix("the stored snapshot for this context is not what a trusted key signed") == true, "\(event)")
        let why: [Tampering: String] = [
            .editedValues: "its values differ from the signed document's",
            .storedUnsigned: "the stored snapshot carries no signature",
            .editedSignature: "its signature does not verify",
            .editedStampTimes: "its signing time or expiry differs from its signature's",
        ]
        #expect(event.message?.contains(why[tampering] ?? "?") == true, "\(event)")
        let keptAt = try #require(event.keptAt)
        #expect(FileManager.default.fileExists(atPath: keptAt), "the file as it was is kept for diagnosis")
        #expect(relaunch.store.lastKnownGood(for: auraPersonal) == nil, "the snapshot is gone from the store")
    }

    /// Leaving safe mode serves what a launch would: with trusted keys, a stored snapshot
    /// rewritten meanwhile is not served when the app marks itself healthy — the code defaults
    /// are, and the edited snapshot is set aside with a `fallback_tampered` event.
    @Test(.hangLimit())
    func leavingSafeModeServesOnlyWhatATrustedKeySigned() async throws {
        let server = try FlagServer(document: Self.document(newCheckout: true, version: "signed-1"))
        defer { server.stop() }
        try server.signAnswers(privateKeyPEM: SigningKeys.privateKeyPEM(Self.operatorSeed), keyID: "ops-2026")
        let dir = TempDir()
        let guarded = FeatureFlagProvider.Configuration(crashLoopGuard: CrashLoopGuard(launchesBeforeSafeMode: 2, healthyAfter: nil))
        // Two launches that fetched and never became healthy.
        for _ in 0..<2 {
            let crash = try ProviderFixture(server: server, dir: dir, configuration: guarded, fetch: Self.trusting)
            #expect(await crash.provider.refresh().isSuccess)
            crash.provider.waitForWrites()
            crash.provider.shutdown()
        }
        let safe = try ProviderFixture(reachable: false, server: server, dir: dir, configuration: guarded, fetch: Self.trusting)
        defer { safe.provider.shutdown() }
        #expect(safe.provider.safeMode != nil)
        // Someone rewrites the stored snapshot under its old signature while the app runs.
        let stored = try #require(safe.store.lastKnownGood(for: auraPersonal)?.snapshot)
        var edited = FlagSnapshot(
            values: ["new_checkout": true, "kill_switch": false, "edited": true], version: stored.version, fetchedAt: stored.fetchedAt,
            contextFingerprint: stored.contextFingerprint)
        edited.signature = stored.signature
        try safe.store.save(edited, etag: nil, for: auraPersonal)
        safe.provider.markHealthy()
        #expect(safe.provider.safeMode == nil)
        #expect(safe.provider.value(FlagKey("edited", default: false)) == false, "never the edited values")
        #expect(safe.provider.details(Self.newCheckout).source == .codeDefault)
        safe.provider.waitForWrites()
        #expect(await eventually { safe.provider.recentEvents.contains { $0.kind == .fallbackTampered } })
        #expect(safe.store.lastKnownGood(for: auraPersonal) == nil, "set aside")
    }

    /// A first launch that fetched the operator's signed flagd rules into `dir`'s fallback
    /// file; where the rules were (the server is stopped).
    static func storeSignedFlagdRules(in dir: TempDir) async throws -> URL {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        try server.serveFlagd(Array(flagdRules.utf8))
        try server.signAnswers(privateKeyPEM: SigningKeys.privateKeyPEM(operatorSeed), keyID: "ops-2026")
        let url = server.baseURL.appendingPathComponent("flagd/flags.json")
        let first = FeatureFlagProvider(
            context: auraPersonal, fetcher: FlagFetcher(endpoint: .flagd(url: url), configuration: trusting),
            store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), reachability: ManualReachability(true),
            lifecycle: ManualLifecycle(foreground: true))
        #expect(await first.refresh().isSuccess)
        first.shutdown()
        return url
    }

    /// Edits the flagd rules held in `dir`'s fallback file (the default variant turned off),
    /// keeping their signature and tag.
    static func editHeldRules(in dir: TempDir) throws {
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        let held = try #require(store.flagdRules)
        let edited = Array(flagdRules.replacingOccurrences(of: #""defaultVariant": "on""#, with: #""defaultVariant": "off""#).utf8)
        var snapshot = FlagSnapshot(values: [:], contextFingerprint: auraPersonal.fingerprint)
        snapshot.rules = LocalRules(
            definitions: try FlagdDefinitions.parse(edited), document: edited, etag: held.etag, fetchedAt: held.fetchedAt, envelope: held.envelope)
        try store.save(snapshot, etag: held.etag, for: auraPersonal)
    }

    @Test(.hangLimit())
    func heldFlagdRulesAreVerifiedAgainAtLaunch() async throws {
        let dir = TempDir()
        let url = try await Self.storeSignedFlagdRules(in: dir)
        func provider() -> FeatureFlagProvider {
            FeatureFlagProvider(
                context: auraPersonal, fetcher: FlagFetcher(endpoint: .flagd(url: url), configuration: Self.trusting),
                store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), reachability: ManualReachability(false),
                lifecycle: ManualLifecycle(foreground: true))
        }

        // An offline relaunch evaluates the verified rules, for this context and any other.
        let intact = provider()
        #expect(intact.value(Self.newCheckout) == true)
        intact.identify(EvaluationContext(targetingKey: "someone-else"))
        #expect(intact.value(Self.newCheckout) == true && !intact.recentEvents.contains { $0.kind == .fallbackTampered })
        intact.shutdown()

        // The held rules edited (the default variant turned off) under the old signature.
        try Self.editHeldRules(in: dir)
        let tampered = provider()
        defer { tampered.shutdown() }
        #expect(tampered.value(Self.newCheckout) == false && tampered.details(Self.newCheckout).source == .codeDefault)
        let events = tampered.recentEvents.filter { $0.kind == .fallbackTampered }.compactMap(\.message)
        #expect(events.contains { $0.hasPrefix("the flag rules held for evaluation on the device are not what a trusted key signed: the held rules differ") }, "\(events)")
        #expect(LastKnownGoodStore(fileURL: dir.url("flags.lkg")).flagdRules == nil, "the edited rules are gone")
    }

    @Test(.hangLimit())
    func anIdentifyToAnEditedSnapshotServesDefaultsAndSaysSo() async throws {
        let f = try await Self.signedStart()
        // Another context's snapshot, stored unsigned (planted in the file).
        let other = EvaluationContext(targetingKey: "user-2")
        try f.store.save(FlagSnapshot(values: ["new_checkout": true], contextFingerprint: other.fingerprint), etag: nil, for: other)
        f.reachability.set(false)
        f.provider.identify(other)
        defer { f.stop() }
        #expect(f.provider.value(Self.newCheckout) == false && f.provider.details(Self.newCheckout).source == .codeDefault)
        #expect(await eventually { f.provider.recentEvents.contains { $0.kind == .fallbackTampered } })
        #expect(await eventually { f.store.lastKnownGood(for: other) == nil })
    }

    @Test(.hangLimit())
    func unusableTrustedKeysServeNothingStoredAtLaunch() async throws {
        let f = try await Self.signedStart()
        f.stop()
        // The app now ships a key that does not read: nothing stored can be verified, so
        // nothing stored is served (and nothing fetched will be).
        var broken = Self.trusting
        broken.trustedKeys = ["ops-2026": "not a key"]
        let relaunch = try ProviderFixture(reachable: false, server: f.server, dir: f.dir, fetch: broken)
        defer { relaunch.stop() }
        #expect(relaunch.provider.value(Self.newCheckout) == false && relaunch.provider.details(Self.newCheckout).source == .codeDefault)
        let event = try #require(relaunch.provider.recentEvents.first { $0.kind == .fallbackTampered })
        #expect(event.message?.contains("the trusted keys are unusable") == true, "\(event)")
    }

    /// The keys a configuration is given are the keys it reports, the fetcher checks with them,
    /// and no keys (set, or cleared) mean no check at all.
    @Test func trustedKeysSetAndClearedDecideWhetherTheFetcherChecks() {
        var configuration = FlagFetcher.Configuration()
        #expect(configuration.trustedKeys.isEmpty && configuration.signatureTrust == nil)
        let endpoint = FlagEndpoint.json(post: URL(string: "http://127.0.0.1:9/flags")!)
        #expect(FlagFetcher(endpoint: endpoint, configuration: configuration).policy.trust == nil)
        configuration.trustedKeys = Self.trusting.trustedKeys
        #expect(configuration.trustedKeys == Self.trusting.trustedKeys)
        let checking = FlagFetcher(endpoint: endpoint, configuration: configuration)
        guard case .ready? = checking.policy.trust else {
            Issue.record("the operator's key does not make a verifier: \(String(describing: checking.policy.trust))")
            return
        }
        configuration.trustedKeys = [:]
        #expect(configuration.signatureTrust == nil && FlagFetcher(endpoint: endpoint, configuration: configuration).policy.trust == nil)
        let unusable = FlagFetcher.Configuration(trustedKeys: ["ops-2026": "not a key"])
        guard case .unusable(let problem)? = FlagFetcher(endpoint: endpoint, configuration: unusable).policy.trust else {
            Issue.record("a key that does not read must make every check fail")
            return
        }
        #expect(problem.message.contains("ops-2026"), "\(problem)")
    }

    @Test(.hangLimit())
    func heldFlagdRulesWithoutTheirSignedAnswerAreSetAside() async throws {
        let dir = TempDir()
        let rules = Array(Self.flagdRules.utf8)
        // Rules held before keys were configured (or stripped of their envelope).
        var snapshot = FlagSnapshot(values: [:], contextFingerprint: auraPersonal.fingerprint)
        snapshot.rules = LocalRules(
            definitions: try FlagdDefinitions.parse(rules), document: rules, etag: nil, fetchedAt: Date(timeIntervalSince1970: 1_790_000_000))
        try LastKnownGoodStore(fileURL: dir.url("flags.lkg")).save(snapshot, etag: nil, for: auraPersonal)
        let provider = FeatureFlagProvider(
            context: auraPersonal,
            fetcher: FlagFetcher(endpoint: .flagd(url: URL(string: "http://127.0.0.1:9/flags.json")!), configuration: Self.trusting),
            store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), reachability: ManualReachability(false),
            lifecycle: ManualLifecycle(foreground: true))
        defer { provider.shutdown() }
        #expect(provider.value(Self.newCheckout) == false && provider.details(Self.newCheckout).source == .codeDefault)
        let messages = provider.recentEvents.filter { $0.kind == .fallbackTampered }.compactMap(\.message)
        #expect(messages.contains { $0.contains("the held rules carry no signature") }, "\(messages)")
        #expect(LastKnownGoodStore(fileURL: dir.url("flags.lkg")).flagdRules == nil)
    }

    @Test func valuesAStreamPushesAreRefusedWhileKeysAreTrusted() {
        // LaunchDarkly's `put`/`patch` carry values, not a signed document: with keys, the
        // fetcher refuses them (the stream's requests for a fetch still work: that fetch is verified).
        let endpoint = FlagEndpoint.launchDarkly(mobileKey: "mob-test", baseURL: URL(string: "http://127.0.0.1:9")!)
        let trusting = FlagFetcher(endpoint: endpoint, configuration: Self.trusting)
        defer { trusting.shutdown() }
        let pushed: [String: FlagValue] = ["new_checkout": ["value": true, "version": 4]]
        guard case .failed(let error) = trusting.streamed(pushed, from: "0/launchdarkly", for: auraPersonal) else {
            Issue.record("pushed values were accepted with trusted keys")
            return
        }
        #expect(error.kind == .signatureRejected && error.description.contains("not a signed document"), "\(error)")
        // Without keys the same values are read.
        let plain = FlagFetcher(endpoint: endpoint)
        defer { plain.shutdown() }
        if case .failed(let error) = plain.streamed(pushed, from: "0/launchdarkly", for: auraPersonal) {
            Issue.record("without keys the pushed values were refused: \(error)")
        }
    }
}
}
