import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
@testable import FeatureFlagsUI
import FeatureFlagsTesting
import FlagServer

/// Exposure events (the first read of a flag by a context in a session) and tracked events:
/// de-duplication, what counts as an exposure, and what leaves the device about the context.
@Suite("Exposures and tracking")
struct ExposureTests {
    static let newCheckout = FlagKey("new_checkout", default: false)
    static let limit = FlagKey("plan_data_limit", default: 0)

    /// A provider fetched once, with exposures on, whose handler collects events.
    func provider(
        detail: EventContextDetail = .fingerprint, exposures: Bool = true, overrides: FlagOverrides? = nil
    ) async throws -> (ProviderFixture, Locked<[FlagEvent]>) {
        let events = Locked<[FlagEvent]>([])
        var configuration = FeatureFlagProvider.Configuration(eventHandler: { event in events.withLock { $0.append(event) } })
        configuration.exposures = exposures
        configuration.eventContext = detail
        configuration.overrides = overrides
        let fixture = try ProviderFixture(configuration: configuration)
        _ = await fixture.provider.refresh()
        return (fixture, events)
    }

    func exposures(_ fixture: ProviderFixture, _ events: Locked<[FlagEvent]>) -> [FlagExposure] {
        fixture.provider.waitForEventHandler()
        return events.withLock { $0 }.compactMap(\.exposure)
    }

    @Test func theFirstReadOfAFlagIsAnExposureAndLaterReadsAreNot() async throws {
        let (fixture, events) = try await provider()
        defer { fixture.stop() }
        let provider = fixture.provider
        for _ in 0..<5 { _ = provider.value(Self.newCheckout) }
        _ = provider.details(Self.newCheckout)
        _ = provider.bool("new_checkout", default: true)
        var seen = exposures(fixture, events)
        #expect(seen.count == 1)
        let first = try #require(seen.first)
        #expect(first.flag == "new_checkout" && first.value == false && first.source == .network)
        #expect(first.contextFingerprint == auraPersonal.fingerprint)

        _ = provider.details(Self.limit)
        _ = provider.value(Self.limit)
        seen = exposures(fixture, events)
        #expect(seen.map(\.flag) == ["new_checkout", "plan_data_limit"], "details(_:) reports too, once")
    }

    @Test func eachContextIsExposedOncePerSessionAndANewValueIsANewExposure() async throws {
        let (fixture, events) = try await provider()
        defer { fixture.stop() }
        let provider = fixture.provider
        _ = provider.value(Self.limit)
        provider.identify(auraBusiness)
        _ = provider.value(Self.limit)  // the stored or code values while reconciling
        _ = await provider.refresh()
        _ = provider.value(Self.limit)
        provider.identify(auraPersonal)
        _ = await provider.refresh()
        _ = provider.value(Self.limit)
        let seen = exposures(fixture, events).filter { $0.flag == "plan_data_limit" }
        let personal = seen.filter { $0.context.fingerprint == auraPersonal.fingerprint }
        let business = seen.filter { $0.context.fingerprint == auraBusiness.fingerprint }
        #expect(personal.count == 1, "coming back to a context does not expose it again to the same value")
        #expect(business.map(\.value) == [.int(750)], "the business plan's value, once")
        // The service changes the value: a new exposure.
        fixture.server.document.base.flags["plan_data_limit"] = FlagEntry(value: 175)
        for index in fixture.server.document.rules.indices { fixture.server.document.rules[index].flags["plan_data_limit"] = nil }
        _ = await provider.refresh()
        _ = provider.value(Self.limit)
        _ = provider.value(Self.limit)
        let after = exposures(fixture, events).filter { $0.flag == "plan_data_limit" && $0.context.fingerprint == auraPersonal.fingerprint }
        #expect(after.map(\.value) == [.int(150), .int(175)])
    }

    @Test func killedOverriddenAndMissingFlagsAreNoExposure() async throws {
        let overrides = FlagOverrides(fileURL: nil, allowed: true, launch: nil)
        try overrides.override("plan_data_limit", 5)
        let (fixture, events) = try await provider(overrides: overrides)
        defer { fixture.stop() }
        let provider = fixture.provider
        for _ in 0..<3 { _ = provider.value(Self.limit) }
        _ = provider.value(FlagKey("no_such_flag", default: 1))
        #expect(exposures(fixture, events).isEmpty, "a tester's override or a missing flag exposes nobody")
        try overrides.clearAll()
        _ = provider.value(Self.limit)
        #expect(exposures(fixture, events).map(\.flag) == ["plan_data_limit"], "the service's value, once the override is gone")

        fixture.server.document.base.flags["kill_switch"] = FlagEntry(value: true)
        _ = await provider.refresh()
        #expect(provider.isKillSwitchActive)
        _ = provider.value(Self.newCheckout)
        _ = provider.details(Self.newCheckout)
        #expect(!exposures(fixture, events).contains { $0.flag == "new_checkout" }, "nobody is exposed while killed")
    }

    @Test func exposuresAreOffByDefault() async throws {
        let (fixture, events) = try await provider(exposures: false)
        defer { fixture.stop() }
        _ = fixture.provider.value(Self.newCheckout)
        _ = fixture.provider.details(Self.newCheckout)
        #expect(exposures(fixture, events).isEmpty)
        #expect(fixture.provider.cell.exposures == nil, "plain reads take the unreporting path")
    }

    @Test(arguments: EventContextDetail.allCases)
    func eventsCarryAttributeValuesOnlyWhenTheAppOptsIn(_ detail: EventContextDetail) async throws {
        let (fixture, events) = try await provider(detail: detail)
        defer { fixture.stop() }
        _ = fixture.provider.value(Self.newCheckout)
        fixture.provider.track("checkout_completed", value: 42.5, attributes: ["items": 3])
        fixture.provider.waitForEventHandler()
        let all = events.withLock { $0 }
        let exposure = try #require(all.compactMap(\.exposure).first)
        let tracked = try #require(all.compactMap(\.tracking).first)
        for context in [exposure.context, tracked.context] {
            #expect(context.fingerprint == auraPersonal.fingerprint)
            #expect(context.targetingKey == (detail == .fingerprint ? nil : "user-1"))
            #expect(context.attributes == (detail == .attributes ? auraPersonal.attributes : nil))
        }
        #expect(tracked.name == "checkout_completed" && tracked.value == 42.5 && tracked.attributes == ["items": 3])
        // Log lines never show context values, whatever the detail.
        for event in all where event.isAnalytics {
            #expect(!event.description.contains("venue-7") && !event.description.contains("user-1"))
        }
    }

    @Test func trackedEventsReachTheHandlerButAreNotReplayed() async throws {
        let (fixture, events) = try await provider(exposures: false)
        defer { fixture.stop() }
        let provider = fixture.provider
        provider.track("opened_cart")
        provider.track("tip", value: 2)
        provider.track("filter", attributes: ["kind": "vegan"])
        provider.track("")
        provider.waitForEventHandler()
        #expect(events.withLock { $0 }.compactMap(\.tracking).map(\.name) == ["opened_cart", "tip", "filter"], "an empty name is ignored")
        #expect(!provider.recentEvents.contains { $0.kind == .tracked }, "analytics never push the lifecycle out of the history")
        #expect(provider.recentEvents.contains { $0.kind == .ready })
    }

    @Test func testClientsRecordWhatWasTrackedAndFallbacksReportExposures() async throws {
        let client = InMemoryFlagClient(["new_checkout": true])
        let flags: any FeatureFlagClient = client
        flags.track("checkout_completed", value: 12, attributes: [:])
        flags.track("opened")
        #expect(client.trackedEvents.map(\.name) == ["checkout_completed", "opened"])
        #expect(client.trackedEvents.first?.value == 12)

        let dir = TempDir()
        try seedFallback(dir, ["new_checkout": true], for: auraPersonal)
        let fallback = FallbackClient(
            store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), context: auraPersonal, exposures: true, eventContext: .targetingKey)
        let stream = fallback.events()
        _ = fallback.value(Self.newCheckout)
        _ = fallback.value(Self.newCheckout)
        fallback.shutdown()
        var seen: [FlagExposure] = []
        for await event in stream { if let exposure = event.exposure { seen.append(exposure) } }
        #expect(seen.count == 1 && seen.first?.source == .fallback && seen.first?.context.targetingKey == "user-1")

        // A fallback client told no context serves the store's most recent one: its events
        // name that context by fingerprint, never the anonymous context it was not told about.
        let unnamed = FallbackClient(
            store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), exposures: true, eventContext: .attributes)
        let unnamedEvents = unnamed.events()
        _ = unnamed.value(Self.newCheckout)
        unnamed.track("opened")
        unnamed.shutdown()
        var contexts: [EventContext] = []
        for await event in unnamedEvents {
            if let exposure = event.exposure { contexts.append(exposure.context) }
            if let tracked = event.tracking { contexts.append(tracked.context) }
        }
        #expect(contexts.count == 2)
        #expect(contexts.allSatisfy { $0.fingerprint == auraPersonal.fingerprint && $0.targetingKey == nil && $0.attributes == nil })
    }
}
