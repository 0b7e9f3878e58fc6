import Foundation
import Testing
import TestSupport
@testable import FeatureFlags

/// The run loop's part of the provider state: claiming the loop, planning the next poll, and
/// the sleeps that wake-ups end — as plain transitions, like the rest of `ProviderStateTests`.
extension ProviderStateTests {
    /// Counts resumptions.
    final class Resumed: Sendable {
        private let count = Locked(0)
        var value: Int { count.withLock { $0 } }
        var resume: ProviderState.Resume { { self.count.withLock { $0 += 1 } } }
    }

    /// Runs the resumptions a transition's effects carry (what the provider does after unlocking).
    func resume(_ effects: [ProviderEffect]) {
        for effect in effects {
            switch effect {
            case .resume(let resume): resume()
            case .wake(let sleepers), .reschedule(let sleepers): for sleeper in sleepers { sleeper() }
            default: break
            }
        }
    }

    @Test func aSleeperIsWokenByTheTransitionThatWakesIt() {
        var s = state()
        let resumed = Resumed()
        #expect(s.apply(.sleep(.runLoop, id: 1, resume: resumed.resume), at: at()).isEmpty, "asleep")
        #expect(s.runLoopSleep.sleeper?.id == 1)
        _ = s.apply(.pathChanged(false), at: at())
        #expect(resumed.value == 0, "the path going down wakes nobody")
        let up = s.apply(.pathChanged(true), at: at())
        #expect(up.map(\.label) == ["wake"])
        resume(up)
        #expect(resumed.value == 1 && s.runLoopSleep.sleeper == nil && s.fetchRequested)
    }

    @Test func aWakeUpWithNobodyAsleepEndsTheNextSleepAtOnce() {
        var s = state()
        let resumed = Resumed()
        let effects = s.apply(.identify(b, members: [b], lastKnownGood: prepared([:]), source: .codeDefault, problem: nil), at: at())
        #expect(effects.map(\.label).last == "wake")
        #expect(s.runLoopSleep.pending && s.runLoopSleep.sleeper == nil)
        let sleep = s.apply(.sleep(.runLoop, id: 1, resume: resumed.resume), at: at())
        #expect(sleep.map(\.label) == ["resume"], "the wake-up came first")
        resume(sleep)
        #expect(resumed.value == 1 && !s.runLoopSleep.pending, "spent")
        #expect(s.apply(.sleep(.runLoop, id: 2, resume: resumed.resume), at: at()).isEmpty, "the next sleep waits")
    }

    @Test func aSleepEndsOnlyForTheSleeperItNames() {
        var s = state()
        let resumed = Resumed()
        _ = s.apply(.sleep(.runLoop, id: 1, resume: resumed.resume), at: at())
        #expect(s.apply(.stopSleeping(.runLoop, id: 2), at: at()).isEmpty, "a sleep that already ended names another")
        #expect(s.apply(.stopSleeping(.healthTimer, id: 1), at: at()).isEmpty, "another sleeper's")
        let stop = s.apply(.stopSleeping(.runLoop, id: 1), at: at())
        #expect(stop.map(\.label) == ["resume"])
        resume(stop)
        #expect(resumed.value == 1 && s.runLoopSleep.sleeper == nil)
        #expect(s.apply(.stopSleeping(.runLoop, id: 1), at: at()).isEmpty, "stopped once")
        // A second sleeper replaces one never woken, which stops waiting.
        _ = s.apply(.sleep(.healthTimer, id: 3, resume: resumed.resume), at: at())
        resume(s.apply(.sleep(.healthTimer, id: 4, resume: resumed.resume), at: at()))
        #expect(resumed.value == 2 && s.healthSleep.sleeper?.id == 4)
    }

    @Test func aChangeOfAppStateWakesBothSleepersWithoutAskingForAFetch() {
        var s = state()
        let resumed = Resumed()
        _ = s.apply(.sleep(.runLoop, id: 1, resume: resumed.resume), at: at())
        _ = s.apply(.sleep(.healthTimer, id: 2, resume: resumed.resume), at: at())
        let background = s.apply(.lifecycle(foreground: false), at: at())
        #expect(background.map(\.label) == ["reschedule", "scheduleInactivity"])
        resume(background)
        #expect(resumed.value == 2 && !s.fetchRequested, "only a new deadline")
        // Nobody asleep now: both remember the next change.
        _ = s.apply(.lifecycle(foreground: true), at: at(1))
        #expect(s.runLoopSleep.pending && s.healthSleep.pending)
    }

    @Test func afterShutdownASleepEndsAtOnce() {
        var s = state()
        let resumed = Resumed()
        _ = s.apply(.sleep(.runLoop, id: 1, resume: resumed.resume), at: at())
        resume(s.apply(.shutdown, at: at()))
        #expect(resumed.value == 1, "shutdown wakes the run loop")
        resume(s.apply(.sleep(.healthTimer, id: 2, resume: resumed.resume), at: at()))
        resume(s.apply(.sleep(.runLoop, id: 3, resume: resumed.resume), at: at()))
        #expect(resumed.value == 3 && s.runLoopSleep.sleeper == nil && s.healthSleep.sleeper == nil, "no sleep outlives shutdown")
    }

    @Test func theRunLoopIsClaimedOnceAndNeverAfterShutdown() {
        var s = state(running: false)
        func claim(_ on: Bool) -> Bool? {
            let answer = Locked<Bool?>(nil)
            _ = s.apply(.running(on) { claimed in answer.withLock { $0 = claimed } }, at: at())
            return answer.withLock { $0 }
        }
        #expect(claim(true) == true && s.running)
        #expect(claim(true) == false && s.running, "a second run() returns at once")
        #expect(claim(false) == true && !s.running)
        #expect(claim(true) == true)
        _ = s.apply(.shutdown, at: at())
        _ = claim(false)
        #expect(claim(true) == false && !s.running, "after shutdown no run() starts")
    }

    @Test func theNextPollIsPlannedInTheState() {
        var s = state()
        func plan() -> ProviderState.NextPoll? { self.plan(&s, after: .unchanged, at: 10) }
        guard case .sleep(let deadline?) = plan() else {
            Issue.record("expected a deadline")
            return
        }
        let interval = FeatureFlagProvider.Configuration().pollInterval
        #expect(deadline > .seconds(10) + interval * 0.5 && deadline < .seconds(10) + interval * 1.5, "the poll interval with jitter")
        guard case .sleep(let second?) = plan() else {
            Issue.record("expected a deadline")
            return
        }
        #expect(second != deadline, "each plan draws its own jitter from the state's source")
        _ = s.apply(.pathChanged(false), at: at())
        #expect(plan() == .sleep(until: .seconds(3_600) + .milliseconds(1)), "no path: until a wake-up, or the fallback values expire")
        #expect(s.waitsForWakeUpOnly, "no fetch is planned")
        s.fatal = true
        #expect(plan() == .stop)
        s.fatal = false
        _ = s.apply(.shutdown, at: at())
        #expect(plan() == .stop)
    }

    @Test func theOverridesRegistrationIsKeptInTheState() {
        var s = state()
        _ = s.apply(.overrides(nil, observer: 7), at: at())
        _ = s.apply(.overrides(nil), at: at())
        #expect(s.overridesObserver == 7, "named once, kept")
    }
}

/// Fallback values that pass their TTL while nothing can be fetched: labelled `STALE` when they
/// do, not at the next failure (which, without a network path, never comes).
extension ProviderStateTests {
    /// The run loop's next deadline, planned at `seconds` after `outcome`.
    func plan(_ s: inout ProviderState, after outcome: FetchOutcome = .skipped("no network path"), at seconds: Double) -> ProviderState.NextPoll? {
        let answer = Locked<ProviderState.NextPoll?>(nil)
        _ = s.apply(.planNextPoll(after: outcome) { next in answer.withLock { $0 = next } }, at: at(seconds))
        return answer.withLock { $0 }
    }

    func timerDue(_ s: inout ProviderState, at seconds: Double) -> (fetch: Bool, effects: [String]) {
        let answer = Locked(false)
        let effects = s.apply(.takeFetchRequest(timerDue: true) { fetch in answer.withLock { $0 = fetch } }, at: at(seconds))
        return (answer.withLock { $0 }, effects.map(\.label))
    }

    @Test func withoutAPathTheRunLoopWakesWhenTheFallbackValuesExpire() {
        var s = state(ttl: 3_600)
        _ = s.apply(.pathChanged(false), at: at(10))
        #expect(s.served.status == .error && s.served.reasonOverride == .cached)
        // No fetch to plan, but a wake-up a millisecond after the TTL runs out.
        #expect(plan(&s, at: 10) == .sleep(until: .seconds(3_600) + .milliseconds(1)))
        #expect(s.waitsForWakeUpOnly, "no fetch is planned: only a wake-up fetches")
        // Woken early (a spurious timer): nothing changes.
        #expect(timerDue(&s, at: 1_000) == (false, []))
        #expect(s.served.status == .error)
        // Due: STALE, said once.
        let due = timerDue(&s, at: 3_600.001)
        #expect(due.fetch == false && due.effects == ["emit stale"])
        #expect(s.served.status == .stale && s.served.reasonOverride == .stale)
        #expect(plan(&s, at: 3_601) == .sleep(until: nil), "nothing left to wait for")
        #expect(timerDue(&s, at: 3_700) == (false, []))
    }

    @Test func valuesThatExpiredInTheBackgroundReadStaleOnReturn() {
        var s = state(ttl: 3_600)
        _ = s.apply(.pathChanged(false), at: at(10))
        _ = s.apply(.lifecycle(foreground: false), at: at(20))
        #expect(plan(&s, at: 20) == .sleep(until: nil), "no timer at all in the background")
        let back = s.apply(.lifecycle(foreground: true), at: at(7_200)).map(\.label)
        #expect(back == ["reschedule", "emit stale"], "\(back)")
        #expect(s.served.status == .stale && s.served.reasonOverride == .stale)
    }

    @Test func onlyFallbackValuesWithATTLAreWaitedFor() {
        // No TTL: nothing will expire.
        var forever = state(ttl: nil)
        _ = forever.apply(.pathChanged(false), at: at(10))
        #expect(plan(&forever, at: 10) == .sleep(until: nil))
        // With a path the poll and retry timers already relabel at each failure.
        var online = state(ttl: 3_600)
        let ticket = startFetch(&online)
        _ = online.apply(report(ticket, .failed(.offline("no route"))), at: at(10))
        guard case .sleep(let deadline?) = plan(&online, at: 10) else {
            Issue.record("expected a retry deadline")
            return
        }
        #expect(deadline < .seconds(3_600), "the retry, not the expiry")
        // Served from the network (READY): no expiry wake-up either.
        var ready = state(ttl: 3_600)
        let second = startFetch(&ready)
        _ = ready.apply(report(second, .fresh(prepared(["x": 2]), etag: nil, unknownKeys: [], streams: [])), at: at(1))
        ready.pathUp = false
        #expect(ready.expiryDeadline(at: at(2)) == nil)
    }
}

extension ProviderStateTests {
    @Test func aTTLFromOutsideCannotMakeTheExpiryWakeUpTrap() {
        // A payload may say `"meta_ttl_seconds": 1e300`: `Duration.seconds(1e300)` would trap.
        for ttl in [1e300, .greatestFiniteMagnitude, 1e20, 4_294_967_316.5] {
            var s = ProviderState(
                context: a, served: ServedState(prepared(["x": 1], ttl: ttl), source: .fallback, status: .notReady, reasonOverride: .cached),
                pathUp: true, configuration: .init(), base: base, random: SplitMix(seed: 7))
            s.running = true
            _ = s.apply(.pathChanged(false), at: at(10))
            #expect(s.served.status == .error)
            guard case .sleep(let deadline?) = plan(&s, at: 10) else {
                Issue.record("no expiry deadline for a TTL of \(ttl)")
                continue
            }
            #expect(deadline == .seconds(10) + .longestWait + .milliseconds(1), "TTL \(ttl)")
        }
        // NaN or infinity: never expires, so nothing to wait for.
        for ttl in [Double.nan, .infinity] {
            var s = ProviderState(
                context: a, served: ServedState(prepared(["x": 1], ttl: ttl), source: .fallback, status: .notReady, reasonOverride: .cached),
                pathUp: true, configuration: .init(), base: base, random: SplitMix(seed: 7))
            _ = s.apply(.pathChanged(false), at: at(10))
            #expect(plan(&s, at: 10) == .sleep(until: nil), "TTL \(ttl)")
        }
    }
}

extension ProviderStateTests {
    @Test func aSignedExpiryEarlierThanTheTTLIsTheOneWaitedFor() {
        var snapshot = FlagSnapshot(values: ["x": 1], version: "v", fetchedAt: Self.start, ttl: 3_600)
        #expect(snapshot.secondsUntilExpiry(at: Self.start.addingTimeInterval(600)) == 3_000)
        snapshot.signature = SignatureStamp(keyID: "k", issuedAt: Self.start, expiresAt: Self.start.addingTimeInterval(900))
        #expect(snapshot.secondsUntilExpiry(at: Self.start.addingTimeInterval(600)) == 300, "the signature's expiry comes first")
        #expect(snapshot.secondsUntilExpiry(at: Self.start.addingTimeInterval(900)) == nil, "expired already")
        #expect(FlagSnapshot(values: ["x": 1], version: "v", fetchedAt: Self.start, ttl: nil).secondsUntilExpiry(at: Self.start) == nil)
    }
}

/// A signed document served `READY` whose `exp` passes between two polls: `STALE` when it
/// does, not at the next poll — and the poll planned stays where it was.
extension ProviderStateTests {
    /// Values signed at the start, expiring `expiresIn` seconds later, as a fetch serves them.
    func signed(expiresIn: TimeInterval) -> PreparedSnapshot {
        var snapshot = FlagSnapshot(values: ["x": 2], version: "v", fetchedAt: Self.start, ttl: 3_600)
        snapshot.signature = SignatureStamp(keyID: "k", issuedAt: Self.start, expiresAt: Self.start.addingTimeInterval(expiresIn))
        return base.prepare(snapshot)
    }

    @Test func aSignedExpiryBetweenPollsTurnsTheValuesStaleWhenItPasses() {
        var s = state()
        let ticket = startFetch(&s)
        _ = s.apply(report(ticket, .fresh(signed(expiresIn: 100), etag: nil, unknownKeys: [], streams: [])), at: at(0))
        #expect(s.served.status == .ready)
        // The poll is about 300 s away; the expiry comes first and is what the loop wakes for.
        guard case .sleep(let wake?) = plan(&s, after: .updated(["x"]), at: 0), let poll = s.plannedPoll else {
            Issue.record("expected a deadline")
            return
        }
        #expect(wake == .seconds(100) + .milliseconds(1) && poll > .seconds(150), "\(wake) \(poll)")
        #expect(!s.waitsForWakeUpOnly)
        // Woken early (a spurious timer): nothing changes.
        #expect(timerDue(&s, at: 50) == (false, []))
        #expect(s.served.status == .ready)
        #expect(plan(&s, after: .updated(["x"]), at: 50) == .sleep(until: wake), "the same poll, the same expiry")
        // Due: STALE, said once, and no fetch before the poll.
        let due = timerDue(&s, at: 100.001)
        #expect(due.fetch == false && due.effects == ["emit stale"], "\(due)")
        #expect(s.served.status == .stale && s.served.reasonOverride == .stale && s.served.source == .network)
        #expect(plan(&s, after: .updated(["x"]), at: 100.001) == .sleep(until: poll), "the poll planned before, not drawn again")
        #expect(timerDue(&s, at: poll.seconds + 0.001) == (true, []), "the poll, when it comes")
    }

    @Test func onlySignedNetworkValuesWaitForTheirExpiry() {
        // Unsigned values with a TTL, served READY: a TTL matters only when a fetch fails.
        var unsigned = state()
        let first = startFetch(&unsigned)
        _ = unsigned.apply(report(first, .fresh(prepared(["x": 2], ttl: 60), etag: nil, unknownKeys: [], streams: [])), at: at(0))
        #expect(unsigned.expiryDeadline(at: at(1)) == nil)
        #expect(timerDue(&unsigned, at: 120).effects.isEmpty && unsigned.served.status == .ready)
        // Signed, but expired already when served: STALE from the start, nothing to wait for.
        var late = state()
        let second = startFetch(&late)
        _ = late.apply(report(second, .fresh(signed(expiresIn: 100), etag: nil, unknownKeys: [], streams: [])), at: at(200))
        #expect(late.served.status == .stale && late.expiryDeadline(at: at(200)) == nil)
        // In the background: no timer; the return to the foreground relabels.
        var away = state()
        let third = startFetch(&away)
        _ = away.apply(report(third, .fresh(signed(expiresIn: 100), etag: nil, unknownKeys: [], streams: [])), at: at(0))
        _ = away.apply(.lifecycle(foreground: false), at: at(10))
        #expect(away.expiryDeadline(at: at(10)) == nil)
        let back = away.apply(.lifecycle(foreground: true), at: at(500)).map(\.label)
        #expect(back.contains("emit stale") && away.served.status == .stale, "\(back)")
    }
}

/// A snapshot stamped by a clock that has since been set back: its age cannot be told, so it is
/// not called fresh, whatever its TTL says.
extension ProviderStateTests {
    @Test func aSnapshotFromTheFutureIsNotFresh() {
        let later = FlagSnapshot(values: ["x": 1], version: "v", fetchedAt: Self.start.addingTimeInterval(86_400), ttl: 3_600)
        #expect(later.isExpired(at: Self.start), "stamped a day ahead: age unknown")
        #expect(later.secondsUntilExpiry(at: Self.start) == nil)
        #expect(later.age(at: Self.start) == 0, "the age is still never negative")
        let skewed = FlagSnapshot(values: ["x": 1], version: "v", fetchedAt: Self.start.addingTimeInterval(30), ttl: 3_600)
        #expect(!skewed.isExpired(at: Self.start), "within a time sync's correction")
        #expect(skewed.secondsUntilExpiry(at: Self.start) == 3_600)
        let noTTL = FlagSnapshot(values: ["x": 1], version: "v", fetchedAt: Self.start.addingTimeInterval(86_400), ttl: nil)
        #expect(!noTTL.isExpired(at: Self.start), "no TTL: never stale, as before")
    }

    @Test func aLaunchAfterTheClockWasSetBackServesTheStoredValuesAsStale() throws {
        let dir = TempDir()
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        let context = EvaluationContext(targetingKey: "u")
        try store.save(FlagSnapshot(values: ["x": 7], version: "v", fetchedAt: Self.start.addingTimeInterval(86_400), ttl: 3_600), etag: nil, for: context)
        let client = FallbackClient(store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), context: context, now: { Self.start })
        let details = client.details(FlagKey("x", default: 0))
        #expect(details.value == 7)
        #expect(details.reason == .stale)
        let fresh = FallbackClient(
            store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), context: context, now: { Self.start.addingTimeInterval(86_400 + 60) })
        #expect(fresh.details(FlagKey("x", default: 0)).reason == .cached, "once the clock is past it again, its age is known")
    }
}
