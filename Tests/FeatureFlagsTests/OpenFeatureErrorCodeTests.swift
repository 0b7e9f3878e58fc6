import FeatureFlags
import FeatureFlagsTesting
import Foundation
import Testing
import TestSupport

/// Error details as OpenFeature's specification gives them: a provider in FATAL says so for a
/// flag it cannot answer (2.2.7), and a type mismatch carries no variant or metadata of the
/// value that was not served.
@Suite("OpenFeature error codes")
struct OpenFeatureErrorCodeTests {
    static let user = EvaluationContext(targetingKey: "u1")

    @Test(.hangLimit())
    func aFatalProviderAnswersProviderFatalForAFlagItCannotServe() async throws {
        let dir = TempDir()
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        try await store.remember(["new_checkout": true], for: Self.user)
        let refused = StubTransport(responses: [FlagResponse(status: 401, body: Array(#"{"error": "bad key"}"#.utf8))])
        let flags = FeatureFlagProvider.forTesting(context: Self.user, store: store, transport: refused, running: false)
        defer { flags.shutdown() }
        _ = await flags.refresh()
        #expect(flags.status == .fatal)
        let missing = flags.details(FlagKey("not_there", default: 7))
        #expect(missing.value == 7 && missing.errorCode == .providerFatal && missing.reason == .error)
        // What the device holds is still served (beyond 2.2.7: Docs/Hooks.md).
        let held = flags.details(FlagKey("new_checkout", default: false))
        #expect(held.value && held.source == .fallback && held.errorCode == nil)
    }

    @Test(.hangLimit())
    func aProviderNotReadyAnswersProviderNotReady() async {
        let dir = TempDir()
        let flags = FeatureFlagProvider.forTesting(
            context: Self.user, store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), reachability: ManualReachability(false), running: false)
        defer { flags.shutdown() }
        #expect(flags.status == .notReady)
        #expect(flags.details(FlagKey("not_there", default: 7)).errorCode == .providerNotReady)
    }

    @Test(.hangLimit())
    func aTypeMismatchCarriesNoVariantOrMetadata() async throws {
        let document = #"{"flags": {"limit": {"value": "many", "variant": "lots", "metadata": {"team": "growth"}}}}"#
        let transport = StubTransport.serving(body: Array(document.utf8))
        let dir = TempDir()
        let flags = FeatureFlagProvider.forTesting(
            context: Self.user, store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), transport: transport, running: false)
        defer { flags.shutdown() }
        #expect(await flags.refresh().isSuccess)
        let asText = flags.details(FlagKey("limit", default: "none"))
        #expect(asText.value == "many" && asText.variant == "lots" && asText.metadata["team"] == "growth", "the value served carries them")
        let mismatch = flags.details(FlagKey("limit", default: 10))
        #expect(mismatch.value == 10 && mismatch.errorCode == .typeMismatch)
        #expect(mismatch.variant == nil && mismatch.metadata.isEmpty, "\(mismatch)")
        #expect(mismatch.errorMessage?.contains("expected Int") == true)
        // The same through the untyped read a client implementation converts.
        let converted = flags.flagDetails("limit").typed(for: FlagKey("limit", default: 10))
        #expect(converted.value == 10 && converted.errorCode == .typeMismatch && converted.variant == nil && converted.metadata.isEmpty)
    }
}
