import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting
import FlagServer

/// A build's feature enum without a catch-all case.
private enum Feature: String, Sendable {
    case usage, billing, supportChat = "support_chat", map, status, team
}

/// Seed 001's enum: a custom `Codable` enum with an `.unknown` case.
private enum CodableFeature: String, Codable, Sendable, UnknownCaseRepresentable {
    case usage, billing, team, unknown
}

private enum Tier: Int, Sendable {
    case bronze = 1, silver, gold
}

/// Seed 001: "If the server sends a new feature the app doesn't recognize, it is safely
/// decoded and ignored by the UI, while an analytics event is logged to alert the
/// development team."
@Suite("Forward-compatible values")
struct ForwardCompatibilityTests {
    private let features = FlagKey<[Feature]>("plan_feature_list", default: [.usage])
    private let codableFeatures = FlagKey<[CodableFeature]>("plan_feature_list", default: [])

    private func unknownEvents(_ client: InMemoryFlagClient) -> [FlagEvent] {
        client.recentEvents.filter { $0.kind == .unknownValues }
    }

    @Test func aNewFeatureFromTheServerIsIgnored() {
        let client = InMemoryFlagClient(["plan_feature_list": ["usage", "hologram_tv", "team"]])
        #expect(client.value(features) == [.usage, .team])
    }

    @Test func aNewFeatureReadsAsTheUnknownCaseWhenTheEnumHasOne() {
        let client = InMemoryFlagClient(["plan_feature_list": ["usage", "hologram_tv", "team", "laser_link"]])
        #expect(client.value(codableFeatures) == [.usage, .unknown, .team, .unknown])
    }

    @Test func oneUnknownMemberNeverFailsTheWholeFlag() {
        let client = InMemoryFlagClient(["plan_feature_list": ["hologram_tv", "billing"]])
        let details = client.details(features)
        #expect(details.value == [.billing])
        #expect(details.errorCode == nil)
        #expect(details.source == .override)
        // Only unknown members: an empty list, not the default.
        client.set(features, [])
        let onlyUnknown = InMemoryFlagClient(["plan_feature_list": ["hologram_tv"]])
        #expect(onlyUnknown.value(features) == [])
    }

    @Test func unknownMembersAreReportedOncePerFlagUntilValuesChange() {
        let client = InMemoryFlagClient(["plan_feature_list": ["usage", "hologram_tv", "laser_link"]])
        for _ in 0..<5 { _ = client.value(features) }
        _ = client.details(features)
        #expect(unknownEvents(client) == [.unknownValues(flag: "plan_feature_list", values: ["hologram_tv", "laser_link"])])
        #expect(unknownEvents(client).first?.metric?.value == 2)
        // New values: reported again on the next read.
        client.set(FlagKey("plan_feature_list", default: [String]()), ["team", "quantum_uplink"])
        _ = client.value(features)
        #expect(unknownEvents(client).last == .unknownValues(flag: "plan_feature_list", values: ["quantum_uplink"]))
        #expect(unknownEvents(client).count == 2)
    }

    @Test func knownMembersOnlyReportNothing() {
        let client = InMemoryFlagClient(["plan_feature_list": ["usage", "team"]])
        _ = client.value(features)
        #expect(unknownEvents(client).isEmpty)
    }

    @Test func textHoldingTheListIsReadToo() {
        // Firebase Remote Config's plan_feature_list is a string holding a JSON array.
        let client = InMemoryFlagClient(["plan_feature_list": #"["billing","hologram_tv"]"#])
        #expect(client.value(features) == [.billing])
        #expect(unknownEvents(client) == [.unknownValues(flag: "plan_feature_list", values: ["hologram_tv"])])
    }

    @Test func membersOfTheWrongTypeCountAsUnknown() {
        let client = InMemoryFlagClient(["plan_feature_list": [7, "usage", ["nested": true]]])
        #expect(client.value(features) == [.usage])
        #expect(unknownEvents(client) == [.unknownValues(flag: "plan_feature_list", values: ["7", #"{"nested":true}"#])])
    }

    @Test func aValueThatIsNotAListIsStillATypeMismatch() {
        let client = InMemoryFlagClient(["plan_feature_list": "usage"])
        #expect(client.value(features) == [.usage])
        #expect(client.details(features).errorCode == .typeMismatch)
        #expect(unknownEvents(client).isEmpty)
    }

    @Test func enumsWithOtherRawTypesWorkToo() {
        let tiers = FlagKey<[Tier]>("tiers", default: [])
        let client = InMemoryFlagClient(["tiers": [1, 3, 9]])
        #expect(client.value(tiers) == [.bronze, .gold])
        #expect(unknownEvents(client) == [.unknownValues(flag: "tiers", values: ["9"])])
    }

    @Test func theKillSwitchReturnsTheDefaultAndReportsNothing() {
        let client = InMemoryFlagClient(["plan_feature_list": ["hologram_tv"], "kill_switch": true])
        #expect(client.value(features) == [.usage])
        #expect(unknownEvents(client).isEmpty)
    }

    @Test func encodingWritesRawValues() {
        #expect(features.flagValue(for: [.supportChat, .team]) == ["support_chat", "team"])
    }

    @Test(.hangLimit())
    func aProviderReportsUnknownFeaturesFromTheServer() async throws {
        var document = ServerDocument.seedExample
        for index in document.rules.indices where document.rules[index].name == "auralink-personal" {
            document.rules[index].flags["plan_feature_list"] = FlagEntry(value: ["usage", "hologram_tv"])
        }
        let f = try ProviderFixture(document: document, configuration: .init(schema: .seedExample))
        defer { f.stop() }
        // The schema does not enumerate features, so the new one does not reject the payload.
        guard case .updated = await f.provider.refresh() else {
            Issue.record("expected activation")
            return
        }
        #expect(f.provider.value(features) == [.usage])
        #expect(f.provider.recentEvents.contains(.unknownValues(flag: "plan_feature_list", values: ["hologram_tv"])))
    }
}
