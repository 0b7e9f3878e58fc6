import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting
import FlagServer

/// Seed 000 §10: "rc_activation_success, rc_fetch_latency_ms, rc_stale_config,
/// rc_schema_validation_errors, rc_killswitch_active" — plus unknown keys — as events on an
/// `AsyncSequence` and a handler hook; seed 002: Limited mode.
@Suite("Metrics and limited mode", .hangLimit())
struct MetricsAndLimitedModeTests {
    @Test func everySeedMetricHasAnEvent() {
        let events: [FlagEvent] = [
            .activated(version: "v1", latencyMilliseconds: 12),
            .fetchCompleted(latencyMilliseconds: 12, outcome: .updated(["a"])),
            .stale(age: 90_000),
            .payloadRejected(violations: [FlagViolation(path: "flags.a", message: "x"), FlagViolation(path: "flags.b", message: "y")], fingerprint: "f"),
            .killSwitch(active: true),
            .unknownKeys(["promo"]),
            .unknownValues(flag: "plan_feature_list", values: ["a", "b", "c"]),
            .fetchFailed(.timeout(.seconds(2))),
        ]
        #expect(events.map { $0.metric?.description ?? "-" } == [
            "rc_activation_success 1 (counter)",
            "rc_fetch_latency_ms{result=updated} 12 (timer_ms)",
            "rc_stale_config 1 (gauge)",
            "rc_schema_validation_errors 2 (counter)",
            "rc_killswitch_active 1 (gauge)",
            "rc_unknown_keys 1 (counter)",
            "rc_unknown_values{flag=plan_feature_list} 3 (counter)",
            "rc_fetch_failures{code=GENERAL} 1 (counter)",
        ])
        #expect(FlagEvent.killSwitch(active: false).metric?.value == 0)
        #expect(FlagEvent.ready.metric == nil && FlagEvent.reconciling.metric == nil)
    }

    @Test func activationSuccessAndFetchLatencyAreMeasuredOnTheInjectedClock() async throws {
        let transport = GatedTransport()
        transport.hold(auraPersonal)
        let f = try ProviderFixture(transport: transport)
        defer { f.stop() }
        let provider = f.provider
        let fetch = Task { await provider.refresh() }
        #expect(await eventually { transport.waitingCount == 1 })
        f.clock.advance(by: .milliseconds(150))
        transport.release(auraPersonal)
        _ = await fetch.value
        #expect(f.provider.recentEvents.contains(.activated(version: "2025-08-04T10:00:00Z", latencyMilliseconds: 150)))
        #expect(f.provider.recentEvents.contains { $0.kind == .fetchCompleted && $0.latencyMilliseconds == 150 && $0.outcome?.name == "updated" })
        // A 304 is measured too.
        _ = await f.provider.refresh()
        #expect(f.provider.recentEvents.last == .fetchCompleted(latencyMilliseconds: 0, outcome: .unchanged))
    }

    @Test func failuresAndRejectionsAreMeasured() async throws {
        let f = try ProviderFixture(configuration: .init(schema: .seedExample))
        defer { f.stop() }
        f.server.fault = .status(503, retryAfter: nil)
        _ = await f.provider.refresh()
        #expect(f.provider.recentEvents.contains { $0.kind == .fetchCompleted && $0.outcome?.name == "failed" })
        #expect(f.provider.recentEvents.contains { $0.metric?.name == "rc_fetch_failures" })
        f.server.fault = nil
        var document = ServerDocument.seedExample
        document.base.flags["kill_switch"] = FlagEntry(value: "no")
        f.server.document = document
        _ = await f.provider.refresh()
        #expect(f.provider.recentEvents.contains { $0.kind == .fetchCompleted && $0.outcome?.name == "rejected" })
        #expect(f.provider.recentEvents.contains { $0.metric?.name == "rc_schema_validation_errors" })
    }

    @Test func staleConfigIsReportedWhenTheTTLExpiredAndTheFetchFails() async throws {
        // Seed 000 §8.2: "UI remains usable; log stale_config=1 if TTL expired."
        let dir = TempDir()
        try seedFallback(dir, auraLinkPersonal, ttl: 60)
        let f = try ProviderFixture(dir: dir)
        defer { f.stop() }
        f.clock.advance(by: .seconds(120))
        f.server.fault = .status(500, retryAfter: nil)
        _ = await f.provider.refresh()
        #expect(f.provider.status == .stale)
        #expect(f.provider.value(.themeColor) == "#3498DB")
        let stale = f.provider.recentEvents.first { $0.kind == .stale }
        #expect(stale?.metric?.name == "rc_stale_config")
    }

    @Test func theHandlerReceivesTheSameEventsAsTheStreamInOrder() async throws {
        let received = Locked<[FlagEvent]>([])
        let f = try ProviderFixture(configuration: .init(eventHandler: { event in received.withLock { $0.append(event) } }))
        defer { f.stop() }
        _ = await f.provider.refresh()
        f.provider.publisher.handler?.drain()
        #expect(received.withLock { $0 } == f.provider.recentEvents)
        #expect(received.withLock { $0 }.contains { $0.metric?.name == "rc_activation_success" })
    }

    @Test func theHandlerMayCallBackIntoTheProvider() async throws {
        // The handler runs on its own queue, never under the provider's locks: reading flags
        // or switching context from inside it cannot deadlock.
        let box = Locked<FeatureFlagProvider?>(nil)
        let seen = Locked<[String]>([])
        let f = try ProviderFixture(configuration: .init(eventHandler: { event in
            guard event.kind == .activated, let provider = box.withLock({ $0 }) else { return }
            seen.withLock { $0.append(provider.value(.themeColor)) }
            provider.identify(auraBusiness)
        }))
        defer { f.stop() }
        box.withLock { $0 = f.provider }
        _ = await f.provider.refresh()
        #expect(await eventually { f.provider.context == auraBusiness })
        #expect(seen.withLock { $0 }.first == "#3498DB")
    }

    @Test func theEventStreamIsAnAsyncSequence() async throws {
        let f = try ProviderFixture()
        defer { f.stop() }
        let stream = f.provider.events()
        _ = await f.provider.refresh()
        f.provider.shutdown()
        var metrics: [String] = []
        for await event in stream { if let metric = event.metric { metrics.append(metric.name) } }
        #expect(metrics.contains("rc_activation_success") && metrics.contains("rc_fetch_latency_ms"))
    }

    @Test func anEventStreamThatFellBehindHearsHowManyItMissed() async throws {
        let f = try ProviderFixture()
        defer { f.stop() }
        let stream = f.provider.events()
        // Nobody reads while 200 events arrive: a stream keeps the newest 128 it has not read.
        for n in 0..<200 { f.provider.track("e\(n)") }
        f.provider.shutdown()
        var kinds: [FlagEvent.Kind] = []
        var tracked: [String] = []
        var missed = 0
        for await event in stream {
            kinds.append(event.kind)
            if event.kind == .tracked { tracked.append("\(event)".components(separatedBy: " ")[1]) }
            missed += event.droppedCount ?? 0
        }
        #expect(kinds.first == .eventsDropped, "told first: the lost events were the oldest")
        #expect(kinds.filter { $0 == .eventsDropped }.count == 1)
        #expect(tracked.count + missed >= 200, "every lost event is counted: \(tracked.count) read, \(missed) missed")
        #expect(tracked.last == "e199")
    }

    @Test func killSwitchTurnsOnLimitedMode() {
        // Seed 002: "When kill_switch is true, navigation to features is disabled and rows are dimmed."
        let client = InMemoryFlagClient(["new_checkout": true])
        #expect(!client.isKillSwitchActive)
        client.setKillSwitch(true)
        #expect(client.isKillSwitchActive)
        #expect(client.value(.newCheckout) == false)
        #expect(client.recentEvents.contains(.killSwitch(active: true)))
        #expect(client.recentEvents.last { $0.metric?.name == "rc_killswitch_active" }?.metric?.value == 1)
        client.setKillSwitch(false)
        #expect(!client.isKillSwitchActive)
        #expect(client.value(.newCheckout))
    }

    @Test func limitedModeHoldsAcrossAnOfflineRelaunch() async throws {
        var killed = ServerDocument.seedExample
        killed.base.flags["kill_switch"] = FlagEntry(value: true)
        let dir = TempDir()
        let f = try ProviderFixture(document: killed, dir: dir)
        _ = await f.provider.refresh()
        #expect(f.provider.isKillSwitchActive)
        f.stop()
        #expect(FallbackClient(fileURL: f.fallbackURL, context: auraPersonal).isKillSwitchActive)
    }
}
