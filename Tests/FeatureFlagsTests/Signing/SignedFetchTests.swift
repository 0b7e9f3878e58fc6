import FeatureFlags
import FlagServer
import Foundation
import Testing
import TestSupport

@testable import FeatureFlags

/// Signed flags over real loopback HTTP: with trusted keys, a provider serves only documents
/// the operator signed. Every refusal — unsigned, a bad signature, an unknown key id, an
/// unusable configured key — fails the fetch with `signature_rejected`, keeps what is served
/// and stored, and a kill switch inside a refused document does not apply; a signed kill does.
@Suite("Signed flags over loopback")
struct SignedFetchTests {
    static let operatorSeed = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 41 &+ 3) }
    static let forgerSeed = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 23 &+ 9) }
    static var trusting: FlagFetcher.Configuration {
        .init(trustedKeys: ["ops-2026": SigningKeys.publicKeyPEM(Ed25519.publicKey(seed: operatorSeed))])
    }
    static let newCheckout = FlagKey("new_checkout", default: false)

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

    @Test(.timeLimit(.minutes(1)))
    func aSignedDocumentIsServedAndStored() async throws {
        let f = try await Self.signedStart()
        defer { f.stop() }
        #expect(f.store.lastKnownGood(for: auraPersonal)?.snapshot.version == "signed-1")
        #expect(!f.provider.recentEvents.contains { $0.kind == .signatureRejected })
    }

    enum Refusal: String, CaseIterable {
        case unsigned, forgedSignature, unknownKeyID, kidlessForgery
    }

    @Test(.timeLimit(.minutes(1)), arguments: Refusal.allCases)
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

    @Test(.timeLimit(.minutes(1)))
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

    @Test(.timeLimit(.minutes(1)))
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

    @Test(.timeLimit(.minutes(1)))
    func rulesEvaluatedOnTheDeviceAreVerifiedToo() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let rules = #"{"flags": {"new_checkout": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "on"}}}"#
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
}
