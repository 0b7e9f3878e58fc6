import Foundation
import Testing
import TestSupport
@testable import FeatureFlags

/// The provider's transitions as plain functions: a state, an input, the next state and the
/// effects, in order. No sockets, no clock, no tasks beyond placeholders.
@Suite("ProviderState transitions")
struct ProviderStateTests {
    static let start = Date(timeIntervalSince1970: 1_750_000_000)
    let base = ServingBase(defaults: ["bundled": FlagEntry(value: 1)], killSwitchKey: "kill_switch")
    let a = EvaluationContext(targetingKey: "a")
    let b = EvaluationContext(targetingKey: "b")

    func at(_ seconds: Double = 0) -> ProviderTime {
        ProviderTime(elapsed: .milliseconds(Int64(seconds * 1000)), date: Self.start.addingTimeInterval(seconds))
    }

    func prepared(_ values: [String: FlagValue], ttl: TimeInterval? = 3_600, fetchedAt: Double = 0) -> PreparedSnapshot {
        base.prepare(FlagSnapshot(values: values, version: "v", fetchedAt: Self.start.addingTimeInterval(fetchedAt), ttl: ttl))
    }

    /// A provider state for `a`, serving `values` from the fallback, not ready, its `run()`
    /// running (unless `running` is false).
    func state(
        _ values: [String: FlagValue] = ["x": 1], pathUp: Bool = true, ttl: TimeInterval? = 3_600, fetchedAt: Double = 0, running: Bool = true
    ) -> ProviderState {
        var s = ProviderState(
            context: a,
            served: ServedState(prepared(values, ttl: ttl, fetchedAt: fetchedAt), source: .fallback, status: .notReady, reasonOverride: .cached),
            pathUp: pathUp, configuration: .init(), base: base, random: SplitMix(seed: 7))
        s.running = running
        return s
    }

    /// Records the outcomes the waiters are answered with.
    final class Answers: Sendable {
        private let seen = Locked<[FetchOutcome]>([])
        var all: [FetchOutcome] { seen.withLock { $0 } }
        var waiter: ProviderState.FetchWaiter { { outcome in self.seen.withLock { $0.append(outcome) } } }
    }

    /// Starts a fetch on `s`; returns its ticket.
    func startFetch(_ s: inout ProviderState, _ answers: Answers = Answers()) -> FetchTicket {
        let effects = s.apply(.refresh(pathUp: true, waiter: answers.waiter), at: at())
        guard case .startFetch(let plan)? = effects.first else {
            Issue.record("expected a fetch to start, got \(effects.map(\.label))")
            return FetchTicket(generation: -1, id: -1)
        }
        return plan.ticket
    }

    func report(
        _ ticket: FetchTicket, _ verdict: FetchVerdict<PreparedSnapshot>, memory: [String: PayloadGate.Memory?] = [:], validations: Int = 0,
        members: [String: StoredFlags]? = nil
    ) -> ProviderInput {
        .fetchEnded(
            FetchReport(ticket: ticket, verdict: verdict, memory: memory, validations: validations, members: members, latency: .milliseconds(40)))
    }

    /// Runs the answer effects (what the provider does after unlocking).
    func answer(_ effects: [ProviderEffect]) {
        for effect in effects {
            switch effect {
            case .answer(let waiters, let outcome), .complete(let waiters, let outcome, _): for w in waiters { w(outcome) }
            case .resume(let resume): resume()
            default: break
            }
        }
    }

    // MARK: identify

    @Test func identifyServesTheNewContextsLastKnownGoodReconciling() {
        var s = state()
        let lkg = prepared(["x": 2])
        let effects = s.apply(.identify(b, members: [b], lastKnownGood: lkg, source: .fallback, problem: nil), at: at())
        #expect(effects.map(\.label) == ["publish", "emit reconciling", "wake"])
        #expect(s.context == b && s.generation == 1)
        #expect(s.served.labels == ServedLabels(status: .reconciling, source: .fallback, reasonOverride: .cached, killed: false))
        #expect(s.served.lookup("x", killSwitchKey: "kill_switch") == 2)
    }

    @Test func identifyWithoutALastKnownGoodServesDefaultsAndReportsAnUnreadableOne() {
        var s = state()
        let effects = s.apply(
            .identify(b, members: [b], lastKnownGood: base.prepare(.empty), source: .codeDefault,
                      problem: .fallbackRejected(reason: "stored snapshot undecodable", keptAt: nil)),
            at: at())
        #expect(effects.map(\.label) == ["emit fallback_rejected", "publish", "emit reconciling", "wake"])
        #expect(s.served.source == .codeDefault)
        #expect(s.served.lookup("x", killSwitchKey: "kill_switch") == nil, "never the previous context's values")
        #expect(s.served.lookup("bundled", killSwitchKey: "kill_switch") == 1)
    }

    @Test func identifyDropsTheFetchInFlightAndItsLateAnswer() {
        var s = state()
        let answers = Answers()
        let ticket = startFetch(&s, answers)
        _ = s.apply(.launched(ticket, Task {}), at: at())
        let effects = s.apply(.identify(b, members: [b], lastKnownGood: prepared([:]), source: .fallback, problem: nil), at: at())
        #expect(effects.map(\.label) == ["cancel", "answer discarded", "publish", "emit reconciling", "wake"])
        answer(effects)
        #expect(answers.all == [.discarded])
        #expect(s.flight == nil)
        // The old fetch's answer arrives late: nothing happens.
        let late = s.apply(report(ticket, .fresh(prepared(["x": 9]), etag: nil, unknownKeys: [], streams: [])), at: at())
        #expect(late.isEmpty)
        #expect(s.served.status == .reconciling && s.served.lookup("x", killSwitchKey: "kill_switch") == nil)
    }

    @Test func identifyTheSameContextOrAfterShutdownDoesNothing() {
        var s = state()
        #expect(s.apply(.identify(a, members: [a], lastKnownGood: prepared([:]), source: .fallback, problem: nil), at: at()).isEmpty)
        #expect(s.generation == 0)
        _ = s.apply(.shutdown, at: at())
        #expect(s.apply(.identify(b, members: [b], lastKnownGood: prepared([:]), source: .fallback, problem: nil), at: at()).isEmpty)
        #expect(s.context == a)
    }

    @Test func identifyKeepsOnlyTheNewMembersValidationMemory() {
        var s = state()
        let memory = PayloadGate.Memory(flags: [:], rejection: nil, rejectedETag: nil)
        s.memory = [a.fingerprint: memory, b.fingerprint: memory]
        _ = s.apply(.identify(b, members: [b], lastKnownGood: prepared([:]), source: .fallback, problem: nil), at: at())
        #expect(Array(s.memory.keys) == [b.fingerprint])
    }

    // MARK: refresh

    @Test func refreshStartsOneFetchAndLaterCallersJoinIt() {
        var s = state()
        let answers = Answers()
        let first = s.apply(.refresh(pathUp: true, waiter: answers.waiter), at: at())
        guard case .startFetch(let plan)? = first.first else {
            Issue.record("expected a fetch")
            return
        }
        #expect(plan.ticket == FetchTicket(generation: 0, id: 1))
        #expect(plan.context == a && plan.members == [a])
        #expect(s.apply(.refresh(pathUp: true, waiter: answers.waiter), at: at()).isEmpty, "joined, not a second request")
        #expect(s.flight?.waiters.count == 2)
        let ended = s.apply(report(plan.ticket, .confirmed(prepared(["x": 1]))), at: at())
        answer(ended)
        #expect(answers.all == [.unchanged, .unchanged])
    }

    @Test func refreshWithoutAPathSendsNothingAndFallsBack() {
        var s = state()
        let answers = Answers()
        let effects = s.apply(.refresh(pathUp: false, waiter: answers.waiter), at: at())
        #expect(effects.map(\.label) == ["emit error", "answer skipped"])
        answer(effects)
        #expect(answers.all == [.skipped("no network path")])
        #expect(s.served.labels == ServedLabels(status: .error, source: .fallback, reasonOverride: .cached, killed: false))
        #expect(s.flight == nil)
    }

    @Test func refreshAfterAFatalErrorOrShutdownOrDuringRetryAfterIsSkipped() {
        var s = state()
        s.fatal = true
        #expect(s.apply(.refresh(pathUp: true, waiter: { _ in }), at: at()).map(\.label) == ["answer skipped"])
        s.fatal = false
        s.retryNotBefore = .seconds(60)
        let answers = Answers()
        answer(s.apply(.refresh(pathUp: true, waiter: answers.waiter), at: at(59)))
        #expect(answers.all == [.skipped("waiting for Retry-After")])
        #expect(s.apply(.refresh(pathUp: true, waiter: { _ in }), at: at(60)).map(\.label) == ["startFetch"])
        var down = state()
        _ = down.apply(.shutdown, at: at())
        let late = Answers()
        answer(down.apply(.refresh(pathUp: true, waiter: late.waiter), at: at()))
        #expect(late.all == [.skipped("shut down")])
    }

    @Test func aLaunchedTaskIsKeptOnlyForTheCurrentFlight() {
        var s = state()
        let ticket = startFetch(&s)
        #expect(s.apply(.launched(ticket, Task {}), at: at()).isEmpty)
        #expect(s.flight?.task != nil)
        #expect(s.apply(.launched(FetchTicket(generation: 0, id: 99), Task {}), at: at()).map(\.label) == ["cancel"])
    }

    // MARK: fetchEnded

    @Test func freshValuesAreServedFromTheNetworkAndPersisted() {
        var s = state()
        s.failures = 2
        s.lastError = .timeout(.seconds(2))
        let ticket = startFetch(&s)
        let effects = s.apply(report(ticket, .fresh(prepared(["x": 5]), etag: EntityTag("\"e\"", endpoint: "0/json"), unknownKeys: ["z", "y", "z"], streams: [])), at: at())
        #expect(effects.map(\.label) == ["publish", "emit activated", "emit unknown_keys", "emit ready", "persist", "complete updated"])
        #expect(effects.contains { if case .emit(let e) = $0 { e == .unknownKeys(["y", "z"]) } else { false } })
        #expect(s.served.labels == ServedLabels(status: .ready, source: .network, reasonOverride: nil, killed: false))
        #expect(s.failures == 0 && s.lastError == nil && s.retryNotBefore == nil)
        #expect(s.flight == nil)
    }

    @Test func theFirstSuccessAfterIdentifySaysTheContextChanged() {
        var s = state()
        _ = s.apply(.identify(b, members: [b], lastKnownGood: prepared([:]), source: .fallback, problem: nil), at: at())
        let ticket = startFetch(&s)
        #expect(ticket.generation == 1)
        let effects = s.apply(report(ticket, .confirmed(prepared(["x": 1]))), at: at())
        #expect(effects.map(\.label) == ["publish", "emit ready", "emit context_changed", "complete unchanged"])
    }

    @Test func aConfirmationWhenAlreadyReadyEmitsNothingButTheChange() {
        var s = state()
        _ = s.apply(report(startFetch(&s), .confirmed(prepared(["x": 1]))), at: at())
        let again = s.apply(report(startFetch(&s), .confirmed(prepared(["x": 1]))), at: at())
        #expect(again.map(\.label) == ["publish", "complete unchanged"], "no second ready, no write")
    }

    @Test func aMergedIdentityKeepsItsMembers() {
        var s = state()
        let members: [String: StoredFlags] = [a.fingerprint: StoredFlags(snapshot: .empty, etag: nil)]
        let effects = s.apply(report(startFetch(&s), .confirmed(prepared([:])), members: members), at: at())
        #expect(effects.first?.label == "keepMembers")
    }

    @Test func aFailureKeepsTheValuesRelabelledAndCountsIt() {
        var s = state()
        _ = s.apply(report(startFetch(&s), .confirmed(prepared(["x": 1]))), at: at())
        let effects = s.apply(report(startFetch(&s), .failed(.httpStatus(500))), at: at())
        #expect(effects.map(\.label) == ["emit fetch_failed", "emit error", "complete failed"])
        #expect(s.served.labels == ServedLabels(status: .error, source: .fallback, reasonOverride: .cached, killed: false))
        #expect(s.served.lookup("x", killSwitchKey: "kill_switch") == 1)
        #expect(s.failures == 1 && s.lastError == .httpStatus(500))
        // A second failure changes nothing visible: no second error event.
        let second = s.apply(report(startFetch(&s), .failed(.httpStatus(500))), at: at())
        #expect(second.map(\.label) == ["emit fetch_failed", "complete failed"])
        #expect(s.failures == 2)
    }

    @Test func aFailurePastTheTTLIsStale() {
        var s = state(ttl: 60)
        let effects = s.apply(report(startFetch(&s), .failed(.offline("down"))), at: at(120))
        #expect(effects.map(\.label) == ["emit fetch_failed", "emit stale", "complete failed"])
        #expect(s.served.labels == ServedLabels(status: .stale, source: .fallback, reasonOverride: .stale, killed: false))
    }

    static func events(_ effects: [ProviderEffect]) -> [FlagEvent] {
        effects.compactMap { if case .emit(let event) = $0 { return event } else { return nil } }
    }

    @Test func aStaleEventSaysHowOldTheValuesAreOrThatTheirAgeIsUnknown() {
        var s = state(ttl: 60)
        let effects = s.apply(report(startFetch(&s), .failed(.offline("down"))), at: at(120))
        #expect(Self.events(effects).contains(.stale(age: 120)))
        // Stamped a day after now: the clock was set back since. The event says so, not "0 s old".
        var ahead = state(ttl: 60, fetchedAt: 86_400)
        let unknown = ahead.apply(report(startFetch(&ahead), .failed(.offline("down"))), at: at())
        let event = Self.events(unknown).first { $0.kind == .stale }
        #expect(event?.age == -86_400)
        #expect(event?.description == "stale age=unknown ahead=86400s")
    }

    @Test func retryAfterIsKeptAndCapped() {
        var s = state()
        _ = s.apply(report(startFetch(&s), .failed(.httpStatus(503, retryAfter: 120))), at: at(10))
        #expect(s.retryNotBefore == .seconds(130))
        s.retryNotBefore = nil
        _ = s.apply(report(startFetch(&s), .failed(.httpStatus(429, retryAfter: 1e9))), at: at(0))
        #expect(s.retryNotBefore == .seconds(86_400), "capped at maximumRetryAfter")
    }

    @Test func credentialsRefusedIsFatal() {
        var s = state()
        let effects = s.apply(report(startFetch(&s), .failed(.httpStatus(401))), at: at())
        #expect(effects.map(\.label) == ["emit fetch_failed", "emit error", "complete failed"])
        #expect(effects.contains { if case .emit(let e) = $0 { e.errorCode == .providerFatal && e.kind == .error } else { false } })
        #expect(s.fatal && s.served.status == .fatal)
    }

    @Test func fatalStaysFatalOfflineAndAcrossAnIdentify() {
        var s = state()
        _ = s.apply(report(startFetch(&s), .failed(.httpStatus(403))), at: at())
        #expect(s.served.status == .fatal)
        // An offline refresh applies the fallback labels, but neither relabels nor announces an error.
        let offline = s.apply(.refresh(pathUp: false, waiter: { _ in }), at: at(10))
        #expect(offline.map(\.label) == ["answer skipped"])
        #expect(s.served.status == .fatal)
        // An identify serves the new context's held values; no fetch follows, so no RECONCILING either.
        let effects = s.apply(.identify(b, members: [b], lastKnownGood: prepared(["x": 9]), source: .fallback, problem: nil), at: at(20))
        #expect(effects.map(\.label) == ["publish"])
        #expect(s.served.status == .fatal && s.context == b)
        #expect(s.served.lookup("x", killSwitchKey: "kill_switch") == 9)
    }

    @Test func aRejectionKeepsTheLastKnownGoodAndDoesNotBackOff() {
        var s = state()
        s.failures = 3
        let rejection = PayloadGate.Rejection(
            violations: [FlagViolation(path: "flags.x", message: "bad")], fingerprint: "f1", killSwitchOn: false, remembered: false)
        let effects = s.apply(report(startFetch(&s), .rejected([rejection])), at: at())
        #expect(effects.map(\.label) == ["emit payload_rejected", "emit error", "complete rejected"])
        #expect(s.failures == 0 && s.lastError == nil)
        #expect(s.served.labels == ServedLabels(status: .error, source: .fallback, reasonOverride: .cached, killed: false))
        // The same payload again: remembered, no second report.
        var remembered = rejection
        remembered.remembered = true
        #expect(s.apply(report(startFetch(&s), .rejected([remembered])), at: at()).map(\.label) == ["complete rejected"])
    }

    @Test func aRejectedPayloadAskingForTheKillSwitchStillKills() {
        var s = state()
        let storedBefore = s.served.prepared.snapshot
        let rejection = PayloadGate.Rejection(violations: [], fingerprint: "f", killSwitchOn: true, remembered: false)
        let effects = s.apply(report(startFetch(&s), .rejected([rejection])), at: at())
        // The kill is held on the device; the stored values are not rewritten (a signed
        // document keeps its signature, held rules stay held).
        #expect(effects.map(\.label) == ["emit payload_rejected", "publish", "emit error", "holdKill", "complete rejected"])
        #expect(s.served.killed && s.served.held)
        #expect(s.served.prepared.snapshot.flags == storedBefore.flags)
        #expect(s.served.lookup("x", killSwitchKey: "kill_switch") == nil)
        // Already killed: nothing more to apply.
        let again = s.apply(report(startFetch(&s), .rejected([rejection])), at: at())
        #expect(!again.contains { $0.label == "persist" || $0.label == "holdKill" })
    }

    @Test func aKillHoldsForEveryContextUntilTheServedContextsAnswerReleasesIt() {
        var s = state()
        // The service kills A: held on the device.
        let killed = s.apply(report(startFetch(&s), .fresh(prepared(["x": 1, "kill_switch": true]), etag: nil, unknownKeys: [], streams: [])), at: at())
        #expect(killed.map(\.label) == ["publish", "emit activated", "emit ready", "holdKill", "persist", "complete updated"])
        guard case .holdKill(let hold?)? = killed.first(where: { $0.label == "holdKill" }) else { return }
        #expect(hold.context == a.fingerprint && hold.since == Self.start)
        // Another context whose stored values do not kill: still killed.
        _ = s.apply(.identify(b, members: [b], lastKnownGood: prepared(["x": 2]), source: .fallback, problem: nil), at: at())
        #expect(s.served.killed && !s.served.prepared.killed)
        #expect(s.served.lookup("x", killSwitchKey: "kill_switch") == nil)
        // Failures and rejections that do not mention the kill change nothing.
        _ = s.apply(report(startFetch(&s), .failed(.offline("down"))), at: at())
        let rejection = PayloadGate.Rejection(violations: [], fingerprint: "f", killSwitchOn: false, remembered: false)
        let rejected = s.apply(report(startFetch(&s), .rejected([rejection])), at: at())
        #expect(!rejected.contains { $0.label == "releaseKill" } && s.served.killed)
        // B's own service answers without a kill: released, for every context.
        let released = s.apply(report(startFetch(&s), .fresh(prepared(["x": 2]), etag: nil, unknownKeys: [], streams: [])), at: at())
        #expect(released.map(\.label) == ["publish", "emit activated", "emit ready", "releaseKill", "persist", "complete updated"])
        #expect(!s.served.killed && s.served.lookup("x", killSwitchKey: "kill_switch") == 2)
        // A 304 confirming values that kill holds again; one that does not, releases.
        _ = s.apply(report(startFetch(&s), .confirmed(prepared(["x": 2, "kill_switch": true]))), at: at())
        #expect(s.served.held)
        let confirmed = s.apply(report(startFetch(&s), .confirmed(prepared(["x": 2]))), at: at())
        #expect(confirmed.contains { $0.label == "releaseKill" } && !s.served.killed)
    }

    @Test func aHoldFromTheStoreKillsFromTheStart() {
        var s = ProviderState(
            context: a, served: ServedState(prepared(["x": 1]), source: .fallback, status: .notReady, reasonOverride: .cached, held: true),
            pathUp: true, configuration: .init(), base: base, random: SplitMix(seed: 1))
        #expect(s.served.killed && s.served.labels.killed)
        #expect(s.served.lookup("x", killSwitchKey: "kill_switch") == nil)
        #expect(s.served.lookup("kill_switch", killSwitchKey: "kill_switch") == true, "the key itself says it is held")
        let killKey = FlagKey("kill_switch", default: false)
        #expect(ServedView(s.served).rawDetails(killKey.name, hash: killKey.nameHash, base: base, now: Self.start).typed(for: killKey).value)
        let x = FlagKey("x", default: 0)
        let details = ServedView(s.served).rawDetails(x.name, hash: x.nameHash, base: base, now: Self.start).typed(for: x)
        #expect(details.value == 0 && details.source == .killSwitch && details.reason == .disabled)
        // The first successful answer without a kill releases it.
        let effects = s.apply(report(startFetch(&s), .fresh(prepared(["x": 1]), etag: nil, unknownKeys: [], streams: [])), at: at())
        #expect(effects.contains { $0.label == "releaseKill" })
        #expect(effects.contains { if case .publish(let old, let new) = $0 { old.killed && !new.killed } else { false } })
    }

    @Test func aCancelledFetchEndsSilently() {
        var s = state()
        let answers = Answers()
        let effects = s.apply(report(startFetch(&s, answers), .cancelled), at: at())
        #expect(effects.map(\.label) == ["complete discarded silently"])
        answer(effects)
        #expect(answers.all == [.discarded])
        #expect(s.served.status == .notReady)
    }

    @Test func validationMemoryAndCountsComeBackWithTheReport() {
        var s = state()
        let memory = PayloadGate.Memory(flags: ["x": FlagEntry(value: 1)], rejection: nil, rejectedETag: nil)
        _ = s.apply(report(startFetch(&s), .confirmed(prepared([:])), memory: [a.fingerprint: memory], validations: 1), at: at())
        #expect(s.memory[a.fingerprint] == memory && s.validations == 1)
        let plan = s.apply(.refresh(pathUp: true, waiter: { _ in }), at: at())
        guard case .startFetch(let next)? = plan.first else { return }
        #expect(next.memory[a.fingerprint] == memory, "handed to the next fetch")
    }

    // MARK: path, waits, unknown values, shutdown

    @Test func pathChanges() {
        var s = state()
        #expect(s.apply(.pathChanged(true), at: at()).isEmpty, "no change")
        let answers = Answers()
        _ = startFetch(&s, answers)
        let down = s.apply(.pathChanged(false), at: at())
        #expect(down.map(\.label) == ["answer discarded", "emit error"])
        answer(down)
        #expect(answers.all == [.discarded] && s.flight == nil && s.served.status == .error)
        #expect(s.apply(.pathChanged(true), at: at()).map(\.label) == ["wake"])
    }

    @Test func aWakeUpThatAsksForAFetchIsRecordedInTheStateAndTakenOnce() {
        var s = state()
        func take(timerDue: Bool = false) -> Bool {
            let asked = Locked(false)
            _ = s.apply(.takeFetchRequest(timerDue: timerDue) { flag in asked.withLock { $0 = flag } }, at: at())
            return asked.withLock { $0 }
        }
        #expect(!take(), "nothing asked yet")
        #expect(!take(timerDue: true), "a timer with no poll planned (an expiry's) does not poll")
        s.plannedPoll = .zero  // what the run loop's plan says: a poll now
        #expect(take(timerDue: true), "a due timer polls in the foreground")
        _ = s.apply(.lifecycle(foreground: false), at: at())
        #expect(!take(timerDue: true), "a timer that fires late, after the app went to the background, does not poll")
        _ = s.apply(.lifecycle(foreground: true), at: at())
        _ = s.apply(.pathChanged(false), at: at())
        #expect(!s.fetchRequested, "the path going down wakes nobody")
        #expect(s.apply(.pathChanged(true), at: at()).map(\.label) == ["wake"])
        #expect(s.fetchRequested)
        #expect(take())
        #expect(!take(), "taken once")
    }

    @Test func readinessWaitsEndWhenTheStatusSettles() {
        var s = state()
        let resumed = Locked(0)
        let resume: ProviderState.Resume = { resumed.withLock { $0 += 1 } }
        #expect(s.apply(.awaitSettled(id: 1, resume: resume), at: at()).isEmpty)
        #expect(s.apply(.awaitSettled(id: 2, resume: resume), at: at()).isEmpty)
        #expect(s.apply(.stopWaiting(id: 2), at: at()).map(\.label) == ["resume"])
        #expect(s.apply(.stopWaiting(id: 2), at: at()).isEmpty, "already released")
        let effects = s.apply(report(startFetch(&s), .failed(.offline("down"))), at: at())
        #expect(effects.map(\.label) == ["emit fetch_failed", "emit error", "resume", "complete failed"])
        // Settled now: a new wait ends at once.
        #expect(s.apply(.awaitSettled(id: 3, resume: resume), at: at()).map(\.label) == ["resume"])
    }

    @Test func unknownValuesAreReportedOncePerChangeOfValues() {
        var s = state()
        #expect(s.apply(.unknownValues(flag: "list", values: ["new"]), at: at()).map(\.label) == ["emit unknown_values"])
        #expect(s.apply(.unknownValues(flag: "list", values: ["new"]), at: at()).isEmpty)
        #expect(s.apply(.unknownValues(flag: "other", values: []), at: at()).isEmpty)
        _ = s.apply(.valuesPublished, at: at())
        #expect(s.apply(.unknownValues(flag: "list", values: ["new"]), at: at()).map(\.label) == ["emit unknown_values"])
    }

    @Test func shutdownReleasesEveryoneOnce() {
        var s = state()
        let answers = Answers()
        let ticket = startFetch(&s, answers)
        _ = s.apply(.launched(ticket, Task {}), at: at())
        _ = s.apply(.awaitSettled(id: 1, resume: {}), at: at())
        let effects = s.apply(.shutdown, at: at())
        #expect(effects.map(\.label) == ["cancel", "answer discarded", "resume", "wake", "stop"])
        #expect(s.shutDown && s.flight == nil && s.settleWaiters.isEmpty)
        #expect(s.apply(.shutdown, at: at()).isEmpty)
        // Reads keep the last values.
        #expect(s.served.lookup("x", killSwitchKey: "kill_switch") == 1)
    }

    // MARK: the end of safe mode

    /// Rules held on the device, standing in for a flagd document: evaluation gives no values.
    final class Rules: HeldRules {
        let document: [UInt8] = Array("{}".utf8)
        let etag: EntityTag? = nil
        let fetchedAt = ProviderStateTests.start
        let envelope: [UInt8]? = nil
        let options = ""
        func snapshot(for context: EvaluationContext, at date: Date) -> FlagSnapshot { FlagSnapshot(values: [:]) }
        func isSame(as other: any HeldRules) -> Bool { other === self }
    }

    /// The app's own mark ends safe mode and serves the last known good again, labelled as a
    /// launch labels it: `STALE` past the TTL, `CACHED` when stored, and no override for values
    /// evaluated on the device from held rules (they keep the reasons the rules gave).
    @Test(arguments: [(ttl: 3_600.0, held: false, reason: FlagReason?.some(.cached)), (60, false, .stale), (3_600, true, nil)])
    func markingHealthyEndsSafeModeWithTheLaunchLabels(ttl: Double, held: Bool, reason: FlagReason?) {
        var s = state()
        s.safeMode = .init(healthy: nil, crashDigest: nil, reason: "2 launches ended early")
        var snapshot = FlagSnapshot(values: ["x": 2], version: "lkg", fetchedAt: Self.start, ttl: ttl)
        if held { snapshot.heldRules = Rules() }
        let answer = HeldAnswer(prepared: base.prepare(snapshot), source: .fallback, held: false)
        // An answer asked for another context (an identify came between) is refused: asked again.
        let refused = Locked<Bool?>(nil)
        let stale = s.apply(.markHealthy(automatic: false, held: answer, for: "another", answer: { v in refused.withLock { $0 = v } }), at: at(120))
        #expect(stale.isEmpty && s.safeMode != nil && refused.withLock { $0 } == false)
        let taken = Locked<Bool?>(nil)
        let effects = s.apply(
            .markHealthy(automatic: false, held: answer, for: s.context.fingerprint, answer: { v in taken.withLock { $0 = v } }), at: at(120))
        #expect(taken.withLock { $0 } == true)
        #expect(s.safeMode == nil)
        #expect(effects.map(\.label).contains("emit safe_mode_left"))
        #expect(s.served.reasonOverride == reason)
        #expect(s.served.lookup("x", killSwitchKey: "kill_switch") == 2)
        // The automatic mark never ends safe mode.
        var automatic = state()
        automatic.safeMode = .init(healthy: nil, crashDigest: nil, reason: "2 launches ended early")
        #expect(automatic.apply(.markHealthy(automatic: true, held: answer, for: automatic.context.fingerprint, answer: { _ in }), at: at(120)).isEmpty)
        #expect(automatic.safeMode != nil)
    }

    // MARK: scheduling

    @Test func nextAttemptFollowsPollBackoffRetryAfterAndThePath() {
        var s = state()
        let poll = s.nextAttempt(after: .unchanged, at: .zero)
        #expect(poll.map { $0 >= .seconds(270) && $0 <= .seconds(330) } == true)
        s.failures = 1
        let backoff = s.nextAttempt(after: .failed(.offline("x")), at: .zero)
        #expect(backoff.map { $0 >= .zero && $0 <= .seconds(1) } == true, "full jitter up to the first ceiling")
        s.retryNotBefore = .seconds(600)
        #expect(s.nextAttempt(after: .failed(.httpStatus(503)), at: .zero) == .seconds(600))
        s.pathUp = false
        #expect(s.nextAttempt(after: .unchanged, at: .zero) == nil, "no path: wait for a wake-up")
    }
}
