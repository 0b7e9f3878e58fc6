import FeatureFlagsServices
import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting

/// LaunchDarkly's mobile stream against a loopback stand-in written from the protocol: `put`,
/// `patch` and `delete` carry values (versions decide), `ping` asks for a poll, other events are
/// ignored, and the stream's faults leave polling as the safety net. The provider's schedule
/// runs on a test clock: a poll seen here that the clock did not cause came from the stream.
@Suite("LaunchDarkly stream")
struct LaunchDarklyStreamTests {
    static let initial = #"{"new_checkout":{"value":false,"variation":1,"version":3},"kill_switch":{"value":false,"version":3},"max_cart_items":{"value":50,"version":3}}"#

    final class Fixture: Sendable {
        let standIn: LaunchDarklyStandIn
        let dir = TempDir()
        let clock = TestClock()
        let provider: FeatureFlagProvider
        let events = Locked<[FlagEvent]>([])
        let loop: Task<Void, Never>

        init(
            method: LaunchDarklyEndpoint.Method = .get, maxResponseBytes: Int = 1 << 20,
            configure: (inout FeatureFlagProvider.Configuration) -> Void = { _ in }
        ) throws {
            standIn = try LaunchDarklyStandIn(flags: LaunchDarklyStreamTests.initial)
            let endpoint = FlagEndpoint.launchDarkly(mobileKey: "mob-test", baseURL: standIn.baseURL, streamBaseURL: standIn.baseURL, useReport: method == .report)
            let events = self.events
            var configuration = FeatureFlagProvider.Configuration(heartbeatDeadline: .seconds(86_400))
            configuration.streamBackoff = Backoff(initial: .milliseconds(20), maximum: .milliseconds(100))
            // The poll timer far from LaunchDarkly's 5-minute silence deadline: advancing the
            // clock to the deadline must not also poll.
            configuration.pollInterval = .seconds(3_600)
            configuration.eventHandler = { event in events.withLock { $0.append(event) } }
            configure(&configuration)
            let clock = self.clock
            provider = FeatureFlagProvider(
                context: EvaluationContext(targetingKey: "user-1", attributes: ["plan": "pro"]),
                fetcher: FlagFetcher(endpoint: endpoint, configuration: .init(maxResponseBytes: maxResponseBytes), clock: clock), store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")),
                configuration: configuration, reachability: AlwaysReachable(), lifecycle: AlwaysForeground(), clock: clock)
            let provider = self.provider
            loop = Task { await provider.run() }
        }

        /// Waits for the launch poll and the stream's connection — until the provider has heard
        /// the stream open (the client has read the answer's head: its silence deadline counts
        /// from then, so a test that moves the clock afterwards moves it past the deadline).
        func started() async -> Bool {
            guard await provider.waitUntilReady(timeout: .seconds(5)) == .ready else { return false }
            return await eventually {
                self.standIn.streamCount == 1 && self.provider.openStreamCount == 1
                    && self.provider.recentEvents.contains { $0.kind == .streamOpened }
            }
        }

        var polls: Int { standIn.requests.filter { $0.path.hasPrefix("/msdk/") }.count }
        var streamRequests: [LaunchDarklyStandIn.Request] { standIn.requests.filter { $0.path.hasPrefix("/meval") } }

        func value(_ name: String) -> FlagValue? { provider.flagValue(name) }

        func stop() {
            loop.cancel()
            provider.shutdown()
            standIn.stop()
        }
    }

    @Test func theStreamIsLaunchDarklysMevalWithTheMobileKeyAndAPutReplacesEveryValue() async throws {
        let f = try Fixture()
        defer { f.stop() }
        #expect(await f.started())
        let stream = try #require(f.streamRequests.first)
        #expect(stream.method == "GET")
        #expect(stream.authorization == "api_key mob-test")
        let encoded = String(stream.path.dropFirst("/meval/".count))
        let context = try FlagJSON.parse(Array(try #require(Base64URL.decode(encoded))))
        #expect(context == ["kind": "user", "key": "user-1", "plan": "pro"])
        #expect(f.provider.recentEvents.contains { $0.kind == .streamOpened && $0.stream?.hasSuffix("/meval/<context>") == true })
        let polls = f.polls
        f.standIn.send("put", data: #"{"new_checkout":{"value":true,"version":4},"max_cart_items":{"value":80,"version":4}}"#)
        #expect(await eventually { f.value("new_checkout") == .bool(true) && f.value("max_cart_items") == .int(80) })
        #expect(await eventually { f.value("kill_switch") == nil })
        #expect(f.polls == polls, "a put needs no poll")
        #expect(f.provider.recentEvents.contains { $0.kind == .changeNotified && $0.via == "put" })
        // Kept in the Last-Known-Good store, as a fetched answer is.
        #expect(await eventually { LastKnownGoodStore(fileURL: f.dir.url("flags.lkg")).lastKnownGood(for: f.provider.context)?.snapshot.flags["max_cart_items"]?.value == .int(80) })
    }

    @Test func aPatchNewerThanTheVersionHeldAppliesAndAnOlderOneIsIgnored() async throws {
        let f = try Fixture()
        defer { f.stop() }
        #expect(await f.started())
        f.standIn.send("put", data: Self.initial)
        f.standIn.send("patch", data: #"{"key":"max_cart_items","value":99,"version":5}"#)
        #expect(await eventually { f.value("max_cart_items") == .int(99) })
        f.standIn.send("patch", data: #"{"key":"max_cart_items","value":1,"version":4}"#)
        f.standIn.send("patch", data: #"{"key":"max_cart_items","value":2,"version":5}"#)
        // A later, newer patch of another flag shows the older ones were read and dropped.
        f.standIn.send("patch", data: #"{"key":"new_checkout","value":true,"version":6}"#)
        #expect(await eventually { f.value("new_checkout") == .bool(true) })
        #expect(f.value("max_cart_items") == .int(99))
    }

    @Test func aDeleteRemovesTheFlagAndKeepsItsVersionAgainstALatePatch() async throws {
        let f = try Fixture()
        defer { f.stop() }
        #expect(await f.started())
        f.standIn.send("put", data: Self.initial)
        f.standIn.send("delete", data: #"{"key":"max_cart_items","version":7}"#)
        #expect(await eventually { f.value("max_cart_items") == nil })
        #expect(f.provider.value(FlagKey("max_cart_items", default: 10)) == 10)
        f.standIn.send("patch", data: #"{"key":"max_cart_items","value":60,"version":6}"#)
        f.standIn.send("delete", data: #"{"key":"new_checkout","version":2}"#)
        f.standIn.send("patch", data: #"{"key":"kill_switch","value":false,"variation":0,"version":8}"#)
        #expect(await eventually { f.provider.recentEvents.filter { $0.via == "patch" }.count >= 1 && !f.provider.isFetching })
        #expect(await eventually { f.provider.snapshot.flags["kill_switch"]?.variant == "0" })
        #expect(f.value("max_cart_items") == nil, "a patch older than the deletion must not bring the flag back")
        #expect(f.value("new_checkout") == .bool(false), "a delete older than the version held is ignored")
    }

    @Test func aPingFetchesThroughThePollingEndpoint() async throws {
        let f = try Fixture()
        defer { f.stop() }
        #expect(await f.started())
        let polls = f.polls
        f.standIn.setFlags(#"{"new_checkout":{"value":true,"version":9}}"#)
        f.standIn.send("ping", data: "")
        #expect(await eventually { f.polls == polls + 1 })
        #expect(await eventually { f.value("new_checkout") == .bool(true) })
        #expect(f.provider.recentEvents.contains { $0.kind == .changeNotified && $0.via == "ping" })
    }

    @Test func anUnknownEventIsIgnoredAndAMalformedOneIsReportedAndDropped() async throws {
        let f = try Fixture()
        defer { f.stop() }
        #expect(await f.started())
        let polls = f.polls
        f.standIn.send("put", data: Self.initial)
        f.standIn.send("flags-changed", data: #"{"new_checkout":{"value":true}}"#)
        f.standIn.send("patch", data: #"{"value":true,"version":40}"#)
        f.standIn.send("put", data: "[not json")
        f.standIn.send("patch", data: #"{"key":"max_cart_items","value":70,"version":41}"#)
        #expect(await eventually { f.value("max_cart_items") == .int(70) })
        #expect(f.value("new_checkout") == .bool(false))
        #expect(f.polls == polls)
        let errors = f.events.withLock { $0 }.filter { $0.kind == .error }
        #expect(errors.count == 2, "\(errors)")
        #expect(errors.allSatisfy { $0.errorCode == .parseError })
        #expect(f.provider.status == .ready)
    }

    @Test func aPatchThatTurnsTheKillSwitchOnIsAnnouncedAndHeld() async throws {
        let f = try Fixture()
        defer { f.stop() }
        #expect(await f.started())
        f.standIn.send("put", data: #"{"new_checkout":{"value":true,"version":3},"kill_switch":{"value":false,"version":3}}"#)
        #expect(await eventually { f.value("new_checkout") == .bool(true) })
        let changes = f.provider.changes()
        f.standIn.send("patch", data: #"{"key":"kill_switch","value":true,"version":4}"#)
        #expect(await eventually { f.provider.isKillSwitchActive })
        #expect(f.provider.value(FlagKey("new_checkout", default: false)) == false)
        // The put's own change may still be on its way to subscribers (values are served before
        // changes are published): the kill's change is the one with the switch on.
        var iterator = changes.makeAsyncIterator()
        var kill: FlagChange?
        for _ in 0..<3 {
            guard let change = await iterator.next() else { break }
            if change.killSwitchActive {
                kill = change
                break
            }
        }
        #expect(kill?.keys.contains("new_checkout") == true)
        #expect(await eventually { f.events.withLock { $0 }.contains { $0.kind == .killSwitch && $0.killSwitchActive == true } })
        #expect(await eventually { LastKnownGoodStore(fileURL: f.dir.url("flags.lkg")).killHold != nil })
    }

    @Test func aDroppedStreamReconnectsAndItsPutIsApplied() async throws {
        let f = try Fixture()
        defer { f.stop() }
        #expect(await f.started())
        f.standIn.dropStreams()
        // The reconnection waits out its backoff on the provider's clock.
        #expect(await f.clock.reconnect { f.streamRequests.count == 2 && f.standIn.streamCount == 1 })
        #expect(await eventually { f.provider.recentEvents.contains { $0.kind == .streamClosed } })
        f.standIn.send("put", data: #"{"new_checkout":{"value":true,"version":12}}"#)
        #expect(await eventually { f.value("new_checkout") == .bool(true) })
    }

    @Test func aHalfOpenStreamIsClosedAfterLaunchDarklysFiveMinutesAndPollsAtOnce() async throws {
        let f = try Fixture()
        defer { f.stop() }
        #expect(await f.started())
        // LaunchDarkly's own deadline, whatever the provider's (a day here).
        #expect(await eventually { f.clock.sleeperDeadlines.contains { f.clock.now.duration(to: $0) == LaunchDarklyEndpoint.streamHeartbeatDeadline } })
        let polls = f.polls
        f.clock.advance(by: LaunchDarklyEndpoint.streamHeartbeatDeadline)
        #expect(await eventually { f.provider.recentEvents.contains { $0.kind == .streamClosed } })
        #expect(await eventually { f.polls == polls + 1 }, "a half-open stream may have missed a change: poll now")
        #expect(await f.clock.reconnect { f.streamRequests.count == 2 })
    }

    @Test func theReportFormSendsTheContextAsTheBody() async throws {
        let f = try Fixture(method: .report)
        defer { f.stop() }
        #expect(await f.started())
        let stream = try #require(f.streamRequests.first)
        #expect(stream.method == "REPORT" && stream.path == "/meval")
        #expect(try FlagJSON.parse(Array(stream.body.utf8)) == ["kind": "user", "key": "user-1", "plan": "pro"])
        f.standIn.send("patch", data: #"{"key":"new_checkout","value":true,"version":4}"#)
        // No put yet on this connection: a patch cannot be applied to values the stream never
        // gave — it asks the polling endpoint instead.
        #expect(await eventually { f.polls == 2 })
    }

    @Test func theSchemaJudgesStreamedValuesAsFetchedOnes() async throws {
        let schema = try FlagSchema(json: Array(#"{"flags":{"max_cart_items":{"type":"int","min":1,"max":100}}}"#.utf8))
        let f = try Fixture { $0.schema = schema }
        defer { f.stop() }
        #expect(await f.started())
        f.standIn.send("put", data: Self.initial)
        f.standIn.send("patch", data: #"{"key":"max_cart_items","value":5000,"version":5}"#)
        #expect(await eventually { f.events.withLock { $0 }.contains { $0.kind == .payloadRejected } })
        #expect(f.value("max_cart_items") == .int(50))
    }

    @Test func aStreamedEventLargerThanTheAnswerCapDropsTheConnectionAndChangesNothing() async throws {
        let f = try Fixture(maxResponseBytes: 4_096)
        defer { f.stop() }
        #expect(await f.started())
        let flags = (0..<200).map { #""flag_\#($0)":{"value":true,"version":5}"# }.joined(separator: ",")
        f.standIn.send("put", data: "{\(flags)}")
        #expect(await eventually { f.provider.recentEvents.contains { $0.kind == .streamClosed && ($0.message ?? "").contains("exceeded") } })
        #expect(f.value("flag_1") == nil)
        #expect(f.value("max_cart_items") == .int(50))
        // It reconnects; an event within the cap is applied.
        #expect(await f.clock.reconnect { f.streamRequests.count == 2 && f.standIn.streamCount == 1 })
        f.standIn.send("put", data: #"{"max_cart_items":{"value":7,"version":6}}"#)
        #expect(await eventually { f.value("max_cart_items") == .int(7) })
    }

    @Test func patchesThatGrowTheDocumentPastTheAnswerCapAskThePollingEndpoint() async throws {
        let f = try Fixture(maxResponseBytes: 4_096)
        defer { f.stop() }
        #expect(await f.started())
        f.standIn.send("put", data: Self.initial)
        #expect(await eventually { f.provider.recentEvents.contains { $0.via == "put" } && !f.provider.isFetching })
        let polls = f.polls
        // Each patch is within the event cap; together they pass the answer cap.
        let text = String(repeating: "t", count: 1_200)
        for n in 0..<3 { f.standIn.send("patch", data: #"{"key":"note_\#(n)","value":"\#(text)","version":5}"#) }
        #expect(await eventually { f.value("note_2") == .string(text) })
        #expect(f.polls == polls)
        f.standIn.send("patch", data: #"{"key":"note_3","value":"\#(text)","version":5}"#)
        #expect(await eventually { f.polls == polls + 1 }, "the polling endpoint answers")
        #expect(await eventually { !f.provider.isFetching && f.value("note_0") == nil }, "what the poll says is served")
        #expect(f.value("max_cart_items") == .int(50))
    }

    @Test func identifyingAnotherUserClosesTheOldUsersStreamAndOpensTheNewOnes() async throws {
        let f = try Fixture()
        defer { f.stop() }
        #expect(await f.started())
        f.provider.identify(EvaluationContext(targetingKey: "user-2"))
        #expect(await eventually { f.streamRequests.count == 2 && f.standIn.streamCount == 1 })
        let second = try #require(f.streamRequests.last)
        let context = try FlagJSON.parse(Array(try #require(Base64URL.decode(String(second.path.dropFirst("/meval/".count))))))
        #expect(context == ["kind": "user", "key": "user-2"])
    }
}
