import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting
import FlagServer

/// Seed 000 §6.4 and §9: validation before activation, over real loopback HTTP. "Type checks;
/// color regex; string length limits. Unknown keys ignored (count metric). On failure →
/// reject payload, keep LKG."
@Suite("Validation before activation", .hangLimit())
struct ValidationBeforeActivationTests {
    private let schemaConfiguration = FeatureFlagProvider.Configuration(schema: .seedExample)

    private func isRejection(_ outcome: FetchOutcome) -> Bool {
        if case .rejected = outcome { true } else { false }
    }

    /// A provider whose Last-Known-Good is AuraLink Personal, after a first fetch of a payload
    /// with a bad hex colour (rejected).
    private func providerAfterABadHexColour(transport: (any FlagTransport)? = nil) async throws -> ProviderFixture {
        let dir = TempDir()
        try seedFallback(dir, auraLinkPersonal)
        let f = try ProviderFixture(
            document: ServerDocument.seedDefaults(["plan_themeColor": "#12345G"]), dir: dir, transport: transport, configuration: schemaConfiguration)
        #expect(isRejection(await f.provider.refresh()))
        return f
    }

    private func rejections(_ provider: FeatureFlagProvider) -> [[FlagViolation]] {
        provider.recentEvents.compactMap(\.violations)
    }

    @Test func badHexColorRejectsThePayloadAndTheLastKnownGoodStays() async throws {
        let dir = TempDir()
        try seedFallback(dir, auraLinkPersonal)
        let f = try ProviderFixture(
            document: ServerDocument.seedDefaults(["plan_themeColor": "#12345G"]), dir: dir, configuration: schemaConfiguration)
        defer { f.stop() }
        let outcome = await f.provider.refresh()
        #expect(outcome == .rejected([FlagViolation(path: "flags.plan_themeColor", message: "\"#12345G\" is not a hex-color")]))
        #expect(f.provider.value(.themeColor) == "#3498DB")
        let details = f.provider.details(.themeColor)
        #expect(details.source == .fallback && details.reason == .cached && details.snapshotVersion == "lkg")
        #expect(f.provider.status == .error)
        #expect(f.provider.labels.source == .fallback)
        #expect(f.provider.lastError == nil, "a rejection is an outcome of a fetch that worked, not a fetch error")
        #expect(f.provider.recentEvents.contains(
            .error(.general, message: "payload rejected by the schema (1 violation): flags.plan_themeColor: \"#12345G\" is not a hex-color")))
        #expect(rejections(f.provider).count == 1)
        // Nothing of the rejected payload reached the disk.
        let reloaded = FallbackClient(fileURL: f.fallbackURL, context: auraPersonal)
        #expect(reloaded.value(.themeColor) == "#3498DB")
        #expect(reloaded.snapshot.version == "lkg")
    }

    @Test func everyViolationIsReportedWithItsKey() async throws {
        let f = try ProviderFixture(
            document: ServerDocument.seedDefaults([
                "plan_themeColor": "blue", "plan_data_limit": -5, "plan_displayName": .string(String(repeating: "x", count: 41)),
                "plan_priority_support": "maybe",
            ]), configuration: schemaConfiguration)
        defer { f.stop() }
        guard case .rejected(let violations) = await f.provider.refresh() else {
            Issue.record("expected a rejection")
            return
        }
        #expect(violations.map(\.path) == [
            "flags.plan_data_limit", "flags.plan_displayName", "flags.plan_priority_support", "flags.plan_themeColor",
        ])
        #expect(rejections(f.provider) == [violations])
        // No Last-Known-Good: the code defaults are served, never the rejected values.
        #expect(f.provider.value(.themeColor) == "#000000")
        #expect(f.provider.details(.themeColor).source == .codeDefault)
        #expect(f.provider.recentEvents.contains { $0.kind == .error && $0.message?.contains("(4 violations)") == true })
    }

    @Test func aMissingRequiredKeyRejectsThePayload() async throws {
        var broken = ServerDocument.seedDefaults([:])
        broken.base.flags["kill_switch"] = nil
        let f = try ProviderFixture(document: broken, configuration: schemaConfiguration)
        defer { f.stop() }
        #expect(await f.provider.refresh() == .rejected([FlagViolation(path: "flags.kill_switch", message: "required")]))
    }

    @Test func unknownKeysAreKeptServedAndCounted() async throws {
        let f = try ProviderFixture(
            document: ServerDocument.seedDefaults(["promo_banner": "Spring sale", "beta_map_layer": true]), configuration: schemaConfiguration)
        defer { f.stop() }
        guard case .updated = await f.provider.refresh() else {
            Issue.record("expected the payload to be accepted")
            return
        }
        #expect(f.provider.string("promo_banner", default: "-") == "Spring sale")
        #expect(f.provider.recentEvents.contains(.unknownKeys(["beta_map_layer", "promo_banner"])))
        #expect(FlagEvent.unknownKeys(["beta_map_layer", "promo_banner"]).metric?.value == 2)
    }

    @Test func aRejectedPayloadIsRememberedNotRevalidatedOnEveryPoll() async throws {
        let f = try await providerAfterABadHexColour()
        defer { f.stop() }
        #expect(f.provider.validationCount == 1)
        // The next poll carries the rejected payload's ETag; the service answers 304: still
        // rejected, nothing decoded or validated, no second event.
        #expect(isRejection(await f.provider.refresh()))
        #expect(f.server.requests.last?.status == 304)
        #expect(f.server.requests.last?.ifNoneMatch != nil, "the rejected payload's tag, not the Last-Known-Good's (it has none)")
        #expect(f.provider.validationCount == 1)
        #expect(rejections(f.provider).count == 1)
        #expect(f.provider.value(.themeColor) == "#3498DB")
        #expect(f.provider.status == .error)
    }

    @Test func aRejectedPayloadFromAServiceWithoutETagsIsRecognised() async throws {
        // A service without ETags sends the same payload in full on every poll: recognised by
        // its content, not re-validated, not reported again.
        let f = try await providerAfterABadHexColour(transport: ETagStrippingTransport())
        defer { f.stop() }
        #expect(f.provider.validationCount == 1)
        #expect(isRejection(await f.provider.refresh()))
        #expect(f.server.requests.last?.status == 200)
        #expect(f.server.requests.last?.ifNoneMatch == nil)
        #expect(f.provider.validationCount == 1)
        #expect(rejections(f.provider).count == 1)
        #expect(f.provider.value(.themeColor) == "#3498DB")
    }

    @Test func aCorrectedPayloadIsAcceptedAfterARejection() async throws {
        let f = try await providerAfterABadHexColour()
        defer { f.stop() }
        f.server.document = ServerDocument.seedDefaults(["plan_themeColor": "#AA00AA"])
        guard case .updated = await f.provider.refresh() else {
            Issue.record("expected the corrected payload to be activated")
            return
        }
        #expect(f.provider.value(.themeColor) == "#AA00AA")
        #expect(f.provider.status == .ready && f.provider.labels.source == .network)
        #expect(f.provider.lastError == nil)
        #expect(await eventually { FallbackClient(fileURL: f.fallbackURL, context: auraPersonal).value(.themeColor) == "#AA00AA" })
    }

    @Test func aRejectionDoesNotBackOff() async throws {
        let f = try ProviderFixture(document: ServerDocument.seedDefaults(["plan_themeColor": "#12345G"]), configuration: schemaConfiguration)
        defer { f.stop() }
        let outcome = await f.provider.refresh()
        #expect(f.provider.consecutiveFailures == 0)
        // The service answered; the next poll comes at the poll interval (± 10 %), not a backoff.
        let now = f.provider.clock.now()
        guard case .sleep(let next?) = f.provider.ask({ .planNextPoll(after: outcome, answer: $0) }, unanswered: .stop) else {
            Issue.record("the run loop would not poll again")
            return
        }
        let wait = next - now
        #expect(wait >= .seconds(270) && wait <= .seconds(330))
    }

    @Test func killSwitchInARejectedPayloadStillAppliesAndPersists() async throws {
        let dir = TempDir()
        try seedFallback(dir, auraLinkPersonal)
        let f = try ProviderFixture(
            document: ServerDocument.seedDefaults(["plan_themeColor": "not a colour", "kill_switch": true]), dir: dir, configuration: schemaConfiguration)
        #expect(isRejection(await f.provider.refresh()))
        #expect(f.provider.isKillSwitchActive)
        #expect(f.provider.isKillSwitchActive)
        #expect(f.provider.value(.themeColor) == "#000000")
        #expect(f.provider.details(.themeColor).source == .killSwitch)
        f.stop()
        // Relaunch offline: the kill holds; the rest is still the Last-Known-Good.
        let offline = FallbackClient(fileURL: f.fallbackURL, context: auraPersonal)
        #expect(offline.isKillSwitchActive)
        #expect(offline.snapshot.flags["plan_themeColor"]?.value == "#3498DB")
    }

    @Test func aRejectedPayloadCannotTurnTheKillSwitchOff() async throws {
        let dir = TempDir()
        var killed = auraLinkPersonal
        killed["kill_switch"] = true
        try seedFallback(dir, killed)
        let f = try ProviderFixture(
            document: ServerDocument.seedDefaults(["plan_themeColor": "#12345G", "kill_switch": false]), dir: dir, configuration: schemaConfiguration)
        defer { f.stop() }
        #expect(isRejection(await f.provider.refresh()))
        #expect(f.provider.isKillSwitchActive)
    }

    @Test func textValuesAreValidatedAsWhatTheyHold() async throws {
        // Firebase sends every value as text: "750" is an int, "true" a bool, "[…]" a list.
        let values: [String: FlagEntry] = [
            "plan_themeColor": FlagEntry(value: "#2C3E50"), "plan_displayName": FlagEntry(value: "AuraLink Business"),
            "plan_data_limit": FlagEntry(value: "750"), "plan_priority_support": FlagEntry(value: "true"),
            "plan_feature_list": FlagEntry(value: #"["usage","team"]"#), "kill_switch": FlagEntry(value: "false"),
        ]
        #expect(FlagSchema.seedExample.validate(values).isValid)
        var bad = values
        bad["plan_data_limit"] = FlagEntry(value: "lots")
        #expect(FlagSchema.seedExample.validate(bad).violations.map(\.description) == [
            "flags.plan_data_limit: expected int, found string"
        ])
    }

    @Test func withoutASchemaEveryPayloadThatDecodesIsServed() async throws {
        let f = try ProviderFixture(document: ServerDocument.seedDefaults(["plan_themeColor": "#12345G"]))
        defer { f.stop() }
        guard case .updated = await f.provider.refresh() else {
            Issue.record("expected activation")
            return
        }
        #expect(f.provider.value(.themeColor) == "#12345G")
        #expect(f.provider.validationCount == 0)
    }

    @Test func lintAndTheProviderReportTheSameViolations() async throws {
        let bad = ServerDocument.seedDefaults(["plan_themeColor": "#12345G", "plan_data_limit": -1])
        let f = try ProviderFixture(document: bad, configuration: schemaConfiguration)
        defer { f.stop() }
        guard case .rejected(let fromProvider) = await f.provider.refresh() else {
            Issue.record("expected a rejection")
            return
        }
        let fromLint = FlagSchema.seedExample.validate(bad.base.flags).violations
        #expect(fromProvider == fromLint)
    }
}
