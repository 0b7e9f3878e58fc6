import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsServices

/// The stream and lifecycle transitions, as plain functions.
extension ProviderStateTests {
    static let link = EventStreamLink(url: URL(string: "https://flags.example.com/events")!, inactivityDelay: .seconds(120), endpoint: "0/ofrep")

    /// A state whose first fetch brought `link`, serving from the network.
    func streaming() -> ProviderState {
        var s = state()
        let ticket = startFetch(&s)
        let ended = FetchReport(
            ticket: ticket, verdict: .fresh(prepared(["x": 2]), etag: nil, unknownKeys: [], streams: [Self.link]), memory: [:],
            validations: 0, members: nil, latency: .milliseconds(5))
        let effects = s.apply(.fetchEnded(ended), at: at())
        #expect(effects.last?.label == "setStreams 1")
        return s
    }

    @Test func streamsOpenOnlyWhileRunRuns() {
        // A refresh without run(): the answer's streams are kept, not opened.
        var s = state(running: false)
        let ticket = startFetch(&s)
        let ended = FetchReport(
            ticket: ticket, verdict: .fresh(prepared(["x": 2]), etag: nil, unknownKeys: [], streams: [Self.link]), memory: [:],
            validations: 0, members: nil, latency: .milliseconds(5))
        #expect(!s.apply(.fetchEnded(ended), at: at()).contains { $0.label.hasPrefix("setStreams") })
        #expect(s.streams.open.isEmpty)
        // run() starts: they open; it returns: they close.
        #expect(s.apply(.running(true), at: at()).map(\.label) == ["setStreams 1"])
        #expect(s.apply(.running(false), at: at()).map(\.label) == ["setStreams 0"])
    }

    @Test func theFirstFetchIsUnconditionalThenTheStreamsAdvertisedAreOpened() {
        var s = state()
        let effects = s.apply(.refresh(pathUp: true, waiter: { _ in }), at: at())
        guard case .startFetch(let plan)? = effects.first else {
            Issue.record("no fetch")
            return
        }
        #expect(plan.trigger == .unconditional)
        s = streaming()
        #expect(s.streams.open == [Self.link])
        let next = s.apply(.refresh(pathUp: true, waiter: { _ in }), at: at(1))
        guard case .startFetch(let second)? = next.first else {
            Issue.record("no fetch")
            return
        }
        #expect(second.trigger == .ask, "once streams are known, fetches are conditional again")
    }

    @Test func streamSignalsCoalesceBehindTheFetchInFlight() {
        var s = streaming()
        let ticket = startFetch(&s)
        let hint1 = RefetchHint(etag: "\"r1\"", lastModified: "1", endpoint: "0/ofrep")
        let hint2 = RefetchHint(etag: "\"r2\"", lastModified: "2", endpoint: "0/ofrep")
        #expect(s.apply(.stream(Self.link, .refetch(etag: "\"r1\"", lastModified: "1")), at: at()).map(\.label) == ["emit change_notified"])
        #expect(s.apply(.stream(Self.link, .refetch(etag: "\"r2\"", lastModified: "2")), at: at()).map(\.label) == ["emit change_notified"])
        #expect(s.streams.queued == .stream(hint2))
        let ended = s.apply(report(ticket, .confirmed(prepared(["x": 2]))), at: at())
        let plans = ended.compactMap { effect -> FetchPlan? in
            if case .startFetch(let plan) = effect { return plan }
            return nil
        }
        #expect(plans.count == 1 && plans.first?.trigger == .stream(hint2), "one more fetch, with the latest metadata")
        #expect(s.streams.queued == nil)
        _ = hint1
    }

    @Test func aSignalFromAStreamNoLongerOpenOrAfterShutdownIsIgnored() {
        var s = streaming()
        let other = EventStreamLink(url: URL(string: "https://old.example.com/s")!)
        #expect(s.apply(.stream(other, .opened), at: at()).isEmpty)
        _ = s.apply(.shutdown, at: at())
        #expect(s.streams.open.isEmpty)
        #expect(s.apply(.stream(Self.link, .opened), at: at()).isEmpty)
    }

    @Test func aClosedStreamIsReportedAndAsksForNothing() {
        var s = streaming()
        let effects = s.apply(.stream(Self.link, .closed(reason: "HTTP 503", retryIn: .milliseconds(700))), at: at())
        #expect(effects.map(\.label) == ["emit stream_closed"])
        #expect(s.flight == nil)
    }

    @Test func aHalfOpenCloseFetchesAtOnceOrQueuesBehindTheFetchInFlight() {
        var s = streaming()
        let effects = s.apply(.stream(Self.link, .closed(reason: "no heartbeat", retryIn: .milliseconds(700), halfOpen: true)), at: at())
        #expect(effects.map(\.label).first == "emit stream_closed")
        guard case .startFetch(let plan)? = effects.last else {
            Issue.record("a silent connection may have missed a change: it fetches at once")
            return
        }
        #expect(plan.trigger == .stream(nil))
        // With a fetch in flight, the close queues one more behind it.
        let queued = s.apply(.stream(Self.link, .closed(reason: "no heartbeat", retryIn: .milliseconds(700), halfOpen: true)), at: at())
        #expect(queued.map(\.label) == ["emit stream_closed"])
        #expect(s.streams.queued == .stream(nil))
    }

    @Test func thePathDownClosesTheStreamsAndItsReturnReopensThem() {
        var s = streaming()
        #expect(s.apply(.pathChanged(false), at: at()).last?.label == "setStreams 0")
        #expect(s.apply(.pathChanged(true), at: at()).map(\.label) == ["wake", "setStreams 1"])
    }

    @Test func theBackgroundStopsTimersThenClosesStreamsAndTheForegroundResumesUnconditionally() {
        var s = streaming()
        let background = s.apply(.lifecycle(foreground: false), at: at(1))
        #expect(background.map(\.label) == ["reschedule", "scheduleInactivity"])
        guard case .scheduleInactivity(let token, let delay)? = background.last else {
            Issue.record("no timer")
            return
        }
        #expect(delay == .seconds(10), "the grace, shorter than the stream's inactivityDelaySec")
        #expect(s.nextAttempt(after: .unchanged, at: .seconds(1)) == nil, "no poll in the background")
        #expect(s.apply(.inactivityElapsed(token: token - 1), at: at(11)).isEmpty, "a stale timer does nothing")
        #expect(s.apply(.inactivityElapsed(token: token), at: at(11)).map(\.label) == ["setStreams 0"])
        let foreground = s.apply(.lifecycle(foreground: true), at: at(500))
        #expect(foreground.map(\.label) == ["reschedule", "startFetch", "setStreams 1"])
        guard case .startFetch(let plan)? = foreground.dropFirst().first else {
            Issue.record("no fetch")
            return
        }
        #expect(plan.trigger == .unconditional)
    }

    @Test func aShortTripToTheBackgroundFetchesOnlyWhenTheLastAnswerIsOld() {
        var s = streaming()
        _ = s.apply(.lifecycle(foreground: false), at: at(1))
        #expect(s.apply(.lifecycle(foreground: true), at: at(2)).map(\.label) == ["reschedule"])
        _ = s.apply(.lifecycle(foreground: false), at: at(3))
        let late = s.apply(.lifecycle(foreground: true), at: at(61))
        #expect(late.map(\.label) == ["reschedule", "startFetch"])
        guard case .startFetch(let plan)? = late.last else {
            Issue.record("no fetch")
            return
        }
        #expect(plan.trigger == .ask)
    }
}

/// A fetch in flight when the app is suspended: its failure on resume is the suspension's,
/// not the service's.
extension ProviderStateTests {
    @Test func aFetchThatFailsAfterSpanningTheBackgroundIsNoFailureAndIsFetchedAgainInTheForeground() {
        var s = streaming()
        let statusBefore = s.served.status
        let ticket = startFetch(&s)
        _ = s.apply(.lifecycle(foreground: false), at: at(1))
        // Resumed much later: the request's budget ran out while the process was frozen.
        let ended = s.apply(report(ticket, .failed(.timeout(.seconds(2)))), at: at(1))
        #expect(ended.map(\.label) == ["complete discarded silently"])
        #expect(s.failures == 0 && s.lastError == nil && s.retryNotBefore == nil)
        #expect(s.served.status == statusBefore, "no ERROR, no fallback label")
        #expect(s.streams.fetchOnForeground)
        // Back in the foreground a moment later (the last answer is recent): fetched at once.
        let foreground = s.apply(.lifecycle(foreground: true), at: at(2))
        #expect(foreground.map(\.label) == ["reschedule", "startFetch"])
        #expect(!s.streams.fetchOnForeground)
    }

    @Test func aFetchThatFailsAfterReturningToTheForegroundIsRetriedAtOnce() {
        var s = streaming()
        let ticket = startFetch(&s)
        _ = s.apply(.lifecycle(foreground: false), at: at(1))
        _ = s.apply(.lifecycle(foreground: true), at: at(2))
        let ended = s.apply(report(ticket, .failed(.offline("the connection was lost"))), at: at(3))
        #expect(ended.map(\.label) == ["complete discarded silently", "startFetch"])
        #expect(s.failures == 0)
        // The retry is an ordinary fetch: if it fails too, that failure counts.
        guard case .startFetch(let plan)? = ended.last else {
            Issue.record("no retry")
            return
        }
        _ = s.apply(report(plan.ticket, .failed(.offline("the connection was lost"))), at: at(4))
        #expect(s.failures == 1 && s.served.status == .error)
    }

    @Test func aSuccessOrAFatalAnswerAfterTheBackgroundCountsAsUsual() {
        var s = streaming()
        let ticket = startFetch(&s)
        _ = s.apply(.lifecycle(foreground: false), at: at(1))
        let ended = s.apply(report(ticket, .fresh(prepared(["x": 3]), etag: nil, unknownKeys: [], streams: [])), at: at(2))
        #expect(ended.contains { $0.label.hasPrefix("persist") })
        #expect(s.served.status == .ready && !s.streams.fetchOnForeground)

        var t = streaming()
        let second = startFetch(&t)
        _ = t.apply(.lifecycle(foreground: false), at: at(1))
        _ = t.apply(report(second, .failed(.httpStatus(401))), at: at(2))
        #expect(t.served.status == .fatal, "credentials refused is the service's answer, suspended or not")
    }

    // MARK: Streams kept from an earlier launch

    /// A state at launch whose store kept the streams of the last full answer.
    func restored() -> ProviderState {
        var s = state()
        s.streams.advertised = [Self.link]
        s.streams.restored = true
        return s
    }

    func plans(_ effects: [ProviderEffect]) -> [FetchPlan] {
        effects.compactMap { if case .startFetch(let plan) = $0 { plan } else { nil } }
    }

    @Test func theLaunchFetchWaitsForAKeptStreamAndItsOpeningAsksForNoOther() {
        var s = restored()
        let launch = s.apply(.refresh(pathUp: true, waiter: { _ in }), at: at())
        #expect(launch.map(\.label) == ["scheduleStreamWait", "setStreams 1"], "the stream first, the fetch held")
        #expect(s.flight != nil, "callers join the held fetch")
        let opened = s.apply(.stream(Self.link, .opened), at: at())
        let started = plans(opened)
        #expect(started.count == 1 && started.first?.trigger == .ask, "the held fetch, conditional, is the opening's fetch")
        #expect(s.streams.queued == nil, "no second fetch queued")
    }

    @Test func theHeldLaunchFetchStartsAfterTheWaitOrWhenTheStreamFails() {
        var s = restored()
        let launch = s.apply(.refresh(pathUp: true, waiter: { _ in }), at: at())
        guard case .scheduleStreamWait(let ticket, let delay)? = launch.first else {
            Issue.record("not held: \(launch.map(\.label))")
            return
        }
        #expect(delay == ProviderState.launchStreamWait)
        #expect(plans(s.apply(.streamWaitElapsed(ticket), at: at(1))).count == 1)
        #expect(s.apply(.streamWaitElapsed(ticket), at: at(1)).isEmpty, "once")

        var t = restored()
        _ = t.apply(.refresh(pathUp: true, waiter: { _ in }), at: at())
        let closed = t.apply(.stream(Self.link, .closed(reason: "HTTP 503", retryIn: .seconds(1))), at: at())
        #expect(plans(closed).first?.trigger == .ask)
    }

    @Test func aKeptStreamTheServiceRefusesIsForgottenAndTheLaunchAsksUnconditionally() {
        var s = restored()
        _ = s.apply(.refresh(pathUp: true, waiter: { _ in }), at: at())
        let refused = s.apply(.stream(Self.link, .closed(reason: "HTTP 404", retryIn: .seconds(1), refused: true)), at: at())
        #expect(plans(refused).first?.trigger == .unconditional)
        #expect(s.streams.advertised == nil && !s.streams.restored)
        #expect(refused.contains { $0.label == "setStreams 0" }, "the refused link is closed")
    }

    @Test func aRefusalOfAStreamLearnedInThisProcessOnlyRetries() {
        var s = streaming()
        let effects = s.apply(.stream(Self.link, .closed(reason: "HTTP 404", retryIn: .seconds(1), refused: true)), at: at())
        #expect(effects.map(\.label) == ["emit stream_closed"])
        #expect(s.streams.advertised == [Self.link])
    }

    @Test func aPathLossDropsTheHeldLaunchFetch() {
        var s = restored()
        _ = s.apply(.refresh(pathUp: true, waiter: { _ in }), at: at())
        _ = s.apply(.pathChanged(false), at: at())
        #expect(s.streams.deferred == nil && s.flight == nil)
    }
}

/// OFREP ADR-0010's refresh without a poll timer: `pollInterval` at its ceiling, and fetches come
/// only at launch, on identify, on return to the foreground and on a stream's notice.
extension ProviderStateTests {
    @Test func thePollIntervalsCeilingLeavesOnlyTheEventDrivenFetches() {
        var configuration = FeatureFlagProvider.Configuration()
        configuration.pollInterval = .seconds(Int64(1) << 40)
        #expect(configuration.pollInterval == .longestWait, "raised no further than 2³² s")
        var s = ProviderState(
            context: a, served: ServedState(prepared(["x": 1]), source: .fallback, status: .notReady, reasonOverride: .cached),
            pathUp: true, configuration: configuration, base: base, random: SplitMix(seed: 7))
        s.running = true
        let ticket = startFetch(&s)
        // A service that advertises no stream.
        _ = s.apply(report(ticket, .fresh(prepared(["x": 2]), etag: nil, unknownKeys: [], streams: [])), at: at(1))
        // The next poll lies past any session (at least half of 2³² s, with the jitter).
        let next = s.nextAttempt(after: .updated(["x"]), at: .seconds(1))
        #expect(next.map { $0 > .seconds(Int64(1) << 31) } == true)
        // Back from the background after the refresh age: a conditional fetch.
        _ = s.apply(.lifecycle(foreground: false), at: at(2))
        let foreground = s.apply(.lifecycle(foreground: true), at: at(120))
        #expect(foreground.map(\.label) == ["reschedule", "startFetch"])
        guard case .startFetch(let plan)? = foreground.last else {
            Issue.record("no foreground fetch")
            return
        }
        #expect(plan.trigger == .ask)
        // A failure is still retried soon: the backoff starts at its first step, whatever the interval.
        _ = s.apply(report(plan.ticket, .failed(.offline("no route"))), at: at(121))
        let retry = s.nextAttempt(after: .failed(.offline("no route")), at: .seconds(121))
        #expect(retry.map { $0 <= .seconds(122) } == true, "\(String(describing: retry))")
    }
}

/// OFREP ADR-0008's `changeDetection` modes, as the three settings Docs/Providers.md maps them to:
/// `sse` is the default configuration (the tests above); `polling` is `changeStreams: false`;
/// `none` adds the ceiling to `pollInterval` and `foregroundRefreshAge`.
extension ProviderStateTests {
    /// A state under `configuration` whose first answer advertised `link`; the answer's effects.
    func answeredWithAStream(_ configuration: FeatureFlagProvider.Configuration) -> (ProviderState, [ProviderEffect]) {
        var s = ProviderState(
            context: a, served: ServedState(prepared(["x": 1]), source: .fallback, status: .notReady, reasonOverride: .cached),
            pathUp: true, configuration: configuration, base: base, random: SplitMix(seed: 7))
        s.running = true
        let ticket = startFetch(&s)
        let ended = FetchReport(
            ticket: ticket, verdict: .fresh(prepared(["x": 2]), etag: nil, unknownKeys: [], streams: [Self.link]), memory: [:],
            validations: 0, members: nil, latency: .milliseconds(5))
        let effects = s.apply(.fetchEnded(ended), at: at(1))
        return (s, effects)
    }

    @Test func changeDetectionPollingIgnoresAdvertisedStreamsAndPolls() {
        var configuration = FeatureFlagProvider.Configuration()
        configuration.changeStreams = false
        var (s, effects) = answeredWithAStream(configuration)
        #expect(!effects.contains { $0.label.hasPrefix("setStreams") }, "\(effects.map(\.label))")
        #expect(s.streams.open.isEmpty)
        #expect(s.apply(.running(true), at: at(2)).allSatisfy { !$0.label.hasPrefix("setStreams") })
        // The next poll within the interval and its jitter (5 min ± 10 %).
        let next = s.nextAttempt(after: .updated(["x"]), at: .seconds(1))
        #expect(next.map { $0 >= .seconds(271) && $0 <= .seconds(331) } == true, "\(String(describing: next))")
    }

    @Test func changeDetectionNoneFetchesOnlyAtStartAndOnIdentify() {
        var configuration = FeatureFlagProvider.Configuration()
        configuration.changeStreams = false
        configuration.pollInterval = .seconds(Int64(1) << 32)
        configuration.foregroundRefreshAge = .seconds(Int64(1) << 32)
        var (s, effects) = answeredWithAStream(configuration)
        #expect(!effects.contains { $0.label.hasPrefix("setStreams") } && s.streams.open.isEmpty)
        // No poll within a session.
        let next = s.nextAttempt(after: .updated(["x"]), at: .seconds(1))
        #expect(next.map { $0 > .seconds(Int64(1) << 31) } == true)
        // A return to the foreground, a day later, fetches nothing.
        _ = s.apply(.lifecycle(foreground: false), at: at(2))
        let foreground = s.apply(.lifecycle(foreground: true), at: at(86_400))
        #expect(!foreground.contains { $0.label == "startFetch" } && !s.fetchRequested, "\(foreground.map(\.label))")
        // A change of context does.
        let identified = s.apply(.identify(b, members: [b], lastKnownGood: prepared([:]), source: .codeDefault, problem: nil), at: at(86_401))
        #expect(identified.map(\.label).contains("wake") && s.fetchRequested, "\(identified.map(\.label))")
    }

    @Test func changeDetectionNoneStillFetchesOnForegroundBeforeAnyAnswer() {
        // With no answer yet (the launch fetch failed or never ran), the foreground asks: the app
        // has nothing the service confirmed.
        var configuration = FeatureFlagProvider.Configuration()
        configuration.changeStreams = false
        configuration.pollInterval = .seconds(Int64(1) << 32)
        configuration.foregroundRefreshAge = .seconds(Int64(1) << 32)
        var s = ProviderState(
            context: a, served: ServedState(prepared(["x": 1]), source: .fallback, status: .notReady, reasonOverride: .cached),
            pathUp: true, configuration: configuration, base: base, random: SplitMix(seed: 7))
        s.running = true
        _ = s.apply(.lifecycle(foreground: false), at: at(1))
        let foreground = s.apply(.lifecycle(foreground: true), at: at(2))
        #expect(foreground.map(\.label) == ["reschedule", "startFetch"])
    }
}

/// A stream an endpoint opens hands the provider values (served as a fetched answer) or asks
/// for a fetch; LaunchDarkly's reader grows its document with every new flag a `patch` brings
/// and every flag a `delete` removes: past the answers' cap, the polling endpoint answers
/// instead, until the stream's next `put`.
extension ProviderStateTests {
    @Test func streamedValuesAreServedAsAnAnswerAndAFetchRequestPolls() {
        var s = streaming()
        func triggers(_ event: StreamEvent, at seconds: Double) -> [FetchTrigger] {
            s.apply(.stream(Self.link, .event(event)), at: at(seconds)).compactMap { effect -> FetchTrigger? in
                if case .startFetch(let plan) = effect { return plan.trigger }
                return nil
            }
        }
        #expect(triggers(.values(["a": ["value": 1]], via: "put"), at: 1) == [.streamed(["a": ["value": 1]], endpoint: Self.link.endpoint)])
        _ = s.apply(report(s.flight?.ticket ?? FetchTicket(generation: -1, id: -1), .fresh(prepared(["a": 1]), etag: nil, unknownKeys: [], streams: [Self.link])), at: at(1))
        #expect(triggers(.fetch(via: "ping"), at: 2) == [.stream(nil)])
        _ = s.apply(report(s.flight?.ticket ?? FetchTicket(generation: -1, id: -1), .fresh(prepared(["a": 1]), etag: nil, unknownKeys: [], streams: [Self.link])), at: at(2))
        let dropped = s.apply(.stream(Self.link, .event(.malformed(event: "patch", reason: "no key"))), at: at(3))
        #expect(dropped.map(\.label) == ["emit error"])
    }

    @Test func aStreamedDocumentPastTheAnswersCapIsDroppedForAPoll() {
        var reader = LaunchDarklyStreamReader(maxBytes: 2_000)
        let big = FlagJSON.string(FlagValue.string(String(repeating: "v", count: 500)))
        func read(_ type: String, _ data: String) -> StreamEvent? { reader.read(ServerSentEvent(type: type, data: data)) }
        #expect(read("put", #"{"a": {"value": 1}}"#) == .values(["a": ["value": 1]], via: "put"))
        // Patches of new flags: three fit in 2,000 bytes, the fourth does not.
        for n in 0..<3 {
            guard case .values(let flags, via: "patch")? = read("patch", #"{"key": "f\#(n)", "value": \#(big)}"#) else {
                Issue.record("patch \(n)")
                return
            }
            #expect(flags.count == n + 2)
        }
        #expect(read("patch", #"{"key": "f3", "value": \#(big)}"#) == .fetch(via: "patch"), "a poll")
        #expect(reader.document == nil)
        // Until the next put, patches ask the polling endpoint too; the put starts again.
        #expect(read("patch", #"{"key": "a", "value": 2}"#) == .fetch(via: "patch"))
        #expect(read("put", #"{"a": {"value": 3}}"#) == .values(["a": ["value": 3]], via: "put"))
        // Unknown events mean nothing; unreadable ones are said.
        #expect(read("other", "{}") == nil)
        #expect(read("ping", "") == .fetch(via: "ping"))
        guard case .malformed(event: "patch", _)? = read("patch", "not json") else {
            Issue.record("an unreadable patch")
            return
        }
    }

    @Test func aStreamedDocumentWeighsWhatItsFlagsAndDeletionsWouldAsJSON() {
        var document = StreamedDocument()
        let flags: [String: FlagValue] = ["a": ["value": true, "version": 3], "bb": ["value": "text", "version": 3]]
        _ = document.apply(.put(flags))
        // Within a byte: each flag is counted with a comma, the last one has none.
        #expect(document.bytes - FlagJSON.bytes(.object(flags)).count == 1)
        // Patching one flag again and again weighs it once.
        for version in 4..<100 { _ = document.apply(.patch(key: "a", flag: ["value": false, "version": .int(version)], version: version)) }
        #expect(document.bytes - FlagJSON.bytes(.object(document.flags)).count == 1)
        // Deletions of distinct flags add up (each is kept as a tombstone).
        let before = document.bytes
        for n in 0..<1_000 { _ = document.apply(.delete(key: "gone_\(n)", version: 1)) }
        #expect(document.bytes > before + 1_000 * 24)
        // A deleted flag patched again weighs as a flag, not as both.
        _ = document.apply(.delete(key: "a", version: 200))
        _ = document.apply(.patch(key: "a", flag: ["value": true, "version": 201], version: 201))
        let again = document.bytes
        _ = document.apply(.patch(key: "a", flag: ["value": true, "version": 202], version: 202))
        #expect(document.bytes == again)
    }
}
