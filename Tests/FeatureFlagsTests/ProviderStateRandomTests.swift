import Foundation
import Testing
import TestSupport
@testable import FeatureFlags

/// The provider's transitions under long random sequences of inputs — fetches started, ended
/// (late, cancelled, killed, rejected), identifies (merged too), path and lifecycle changes,
/// stream signals and streamed values, overrides, waits, sleeps, the run loop's questions,
/// safe mode — checked after every step against what the library promises whatever the
/// order: no caller is answered twice, every caller is answered by shutdown, nothing starts
/// after it, the kill switch holds exactly while the answers the provider accepted say so, and
/// an unkilled read returns the override outside safe mode, else the served snapshot's value.
/// Deterministic: each seed is one sequence.
@Suite("ProviderState under random inputs")
struct ProviderStateRandomTests {
    let helper = ProviderStateTests()
    let link = EventStreamLink(url: URL(string: "https://flags.example.com/events")!, inactivityDelay: .seconds(120), endpoint: "0/ofrep")

    /// How often each caller was answered (refresh waiters, readiness waits, sleeps).
    final class Calls: Sendable {
        private let counts = Locked<[Int: Int]>([:])
        func call(_ id: Int) { counts.withLock { $0[id, default: 0] += 1 } }
        func count(_ id: Int) -> Int { counts.withLock { $0[id, default: 0] } }
    }

    /// Runs what the provider runs after unlocking — answers and resumes — and returns the
    /// fetches the effects start.
    static func perform(_ effects: [ProviderEffect]) -> [FetchPlan] {
        var started: [FetchPlan] = []
        for effect in effects {
            switch effect {
            case .answer(let waiters, let outcome), .complete(let waiters, let outcome, _): for w in waiters { w(outcome) }
            case .resume(let resume): resume()
            case .wake(let resumes), .reschedule(let resumes): for r in resumes { r() }
            case .startFetch(let plan): started.append(plan)
            default: break
            }
        }
        return started
    }

    /// One random sequence; returns a description of the first broken promise, if any.
    func run(seed: UInt64, steps: Int) -> String? {
        var rng = SplitMix(seed: seed)
        func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &rng) < percent }
        var s = helper.state(["x": 1], pathUp: chance(80), running: chance(70))
        // Some sequences start in the crash-loop guard's safe mode, some of those with the
        // digest of values the service will send again ({"x": 5}).
        let crashed = LaunchJournal.digest(helper.prepared(["x": 5]).snapshot)
        if chance(30) { s.safeMode = .init(healthy: nil, crashDigest: chance(50) ? crashed : nil, reason: "2 launches ended early") }
        let calls = Calls()
        var nextID = 0
        var refreshIDs: [Int] = []
        var settleIDs: [Int] = []
        var sleepIDs: [Int] = []
        var tickets: [FetchTicket] = []
        var seconds = 0.0
        // The model: reads fall to their defaults while the served snapshot kills, or while a
        // kill is held — from an accepted answer that killed (even a rejected one), for every
        // context, until an accepted answer without it.
        var held = false
        var snapshotKills = false
        // The value of `x` the served snapshot holds: the last accepted answer's, or the stored
        // one an identify served.
        var x = 1
        // The override of `x` the provider was given last (served outside safe mode).
        var overridden: Int?
        let contexts = [helper.a, helper.b, EvaluationContext(targetingKey: "c")]

        func values() -> [String: FlagValue] {
            var v: [String: FlagValue] = ["x": .int(Int.random(in: 0...9, using: &rng))]
            if chance(25) { v["kill_switch"] = true } else if chance(50) { v["kill_switch"] = false }
            return v
        }
        func ticket() -> FetchTicket {
            if let current = s.flight?.ticket, chance(75) { return current }
            return tickets.randomElement(using: &rng) ?? FetchTicket(generation: 0, id: 0)
        }
        var answered = 0
        func verdict() -> (FetchVerdict<PreparedSnapshot>, kill: Bool?) {
            switch Int.random(in: 0..<9, using: &rng) {
            case 0, 1:
                let v = values()
                answered = v["x"]?.intValue ?? -1
                return (.fresh(helper.prepared(v), etag: nil, unknownKeys: [], streams: []), v["kill_switch"] == true)
            case 2:
                let v = values()
                answered = v["x"]?.intValue ?? -1
                return (.confirmed(helper.prepared(v)), v["kill_switch"] == true)
            case 3:
                let on = chance(50)
                let rejection = PayloadGate.Rejection(violations: [], fingerprint: "f\(seed)", killSwitchOn: on, remembered: chance(30))
                return (.rejected([rejection]), on ? true : nil)
            case 4: return (.failed(.offline("down")), nil)
            case 5: return (.failed(.httpStatus(503, retryAfter: Double.random(in: 0...900, using: &rng))), nil)
            case 6: return (.failed(.httpStatus(chance(20) ? 401 : 500)), nil)
            case 7: return (.failed(.timeout(.seconds(2))), nil)
            default: return (.cancelled, nil)
            }
        }

        for step in 0..<steps {
            seconds += Double(Int.random(in: 0...40, using: &rng))
            let time = helper.at(seconds)
            let input: ProviderInput
            var answerKills: Bool?
            var servedKills: Bool?
            switch Int.random(in: 0..<23, using: &rng) {
            case 0, 1, 2:
                nextID += 1
                refreshIDs.append(nextID)
                let id = nextID
                input = .refresh(pathUp: chance(85), waiter: { _ in calls.call(id) })
            case 3:
                input = .launched(ticket(), Task {})
            case 4, 5, 6:
                let t = ticket()
                let (v, kill) = verdict()
                // In safe mode, an answer that repeats the crash's values (and does not kill) is
                // not served: nothing the model follows changes.
                let heldBack: Bool = {
                    guard let safe = s.safeMode, kill != true, let digest = safe.crashDigest else { return false }
                    switch v {
                    case .fresh(let p, _, _, _), .confirmed(let p): return LaunchJournal.digest(p.snapshot) == digest
                    default: return false
                    }
                }()
                if s.flight?.ticket == t, !s.shutDown, !heldBack {
                    // Only the answer of the fetch in flight is taken.
                    if case .fresh = v {
                        answerKills = kill
                        x = answered
                    }
                    if case .confirmed = v {
                        answerKills = kill
                        x = answered
                    }
                    if case .rejected = v, kill == true { answerKills = true }
                }
                input = helper.report(t, v)
            case 7:
                var context = contexts.randomElement(using: &rng) ?? helper.a
                var members = [context]
                if chance(30) {
                    // A merged identity: its members, and the context it is known by.
                    members = [context, contexts.randomElement(using: &rng) ?? helper.b]
                    context = ContextMerge.identity(of: members)
                }
                let v = values()
                if context != s.context, !s.shutDown {
                    // In safe mode the state serves the context's healthy values instead.
                    let served = s.safeMode == nil ? v : (s.journal.healthy[context.fingerprint]?.flags.compactMapValues(\.value) ?? [:])
                    servedKills = served["kill_switch"] == true
                    x = served["x"]?.intValue ?? -1
                }
                input = .identify(context, members: members, lastKnownGood: helper.prepared(v), source: .fallback, problem: nil)
            case 8: input = .pathChanged(chance(60))
            case 9:
                nextID += 1
                settleIDs.append(nextID)
                let id = nextID
                input = .awaitSettled(id: id, resume: { calls.call(id) })
            case 10: input = .stopWaiting(id: settleIDs.randomElement(using: &rng) ?? 0)
            case 11: input = .running(chance(60))
            case 12:
                let outcomes: [FetchOutcome] = [.unchanged, .updated(["x"]), .failed(.offline("down")), .discarded]
                input = .planNextPoll(after: outcomes.randomElement(using: &rng) ?? .unchanged, answer: { _ in })
            case 13:
                nextID += 1
                sleepIDs.append(nextID)
                let id = nextID
                input = .sleep(.runLoop, id: id, resume: { calls.call(id) })
            case 14: input = .stopSleeping(.runLoop, id: sleepIDs.randomElement(using: &rng) ?? 0)
            case 15: input = .takeFetchRequest(timerDue: chance(50), answer: { _ in })
            case 16: input = .lifecycle(foreground: chance(60))
            case 17:
                let signals: [ChangeStream.Signal] = [
                    .opened, .refetch(etag: "e\(step)", lastModified: nil),
                    .closed(reason: "gone", retryIn: .seconds(1), halfOpen: chance(30), refused: chance(10)),
                ]
                input = .stream(link, signals.randomElement(using: &rng) ?? .opened)
            case 18: input = chance(50) ? .inactivityElapsed(token: s.streams.inactivityToken) : .valuesPublished
            case 19:
                // Overrides of `x` (or none): served over the snapshot, except in safe mode and
                // under a kill.
                let layer = chance(60) ? OverrideLayer(["x": .int(100 + step)], killSwitchKey: "kill_switch") : nil
                if !s.shutDown { overridden = layer.map { _ in 100 + step } }
                input = .overrides(layer)
            case 20:
                let streamed: [StreamEvent] = [.values(["x": ["value": 3]], via: "put"), .values([:], via: "delete"), .fetch(via: "ping")]
                input = .stream(link, .event(streamed.randomElement(using: &rng) ?? .values([:], via: "put")))
            case 21: input = chance(50) ? .streamWaitElapsed(ticket()) : .unknownValues(flag: "x", values: ["\(step)"])
            default:
                if chance(10) {
                    input = .shutdown
                } else {
                    input = .markHealthy(
                        automatic: chance(50), held: HeldAnswer(prepared: helper.prepared(["x": 1]), source: .fallback, held: false),
                        for: s.context.fingerprint, answer: { _ in })
                }
            }
            let wasSafe = s.safeMode != nil
            let wasShutDown = s.shutDown
            let started = Self.perform(s.apply(input, at: time))
            func named() -> String { "step \(step), \(String(describing: input).prefix(60))…" }
            if wasShutDown, !started.isEmpty { return "\(named()): a fetch started after shutdown" }
            tickets += started.map(\.ticket)
            if let answerKills {
                held = answerKills
                snapshotKills = answerKills
            }
            if let servedKills { snapshotKills = servedKills }
            if case .markHealthy(false, _, _, _) = input, wasSafe, !s.shutDown {
                // The app's mark ends safe mode serving the last known good it passes (x = 1,
                // no kill of its own).
                x = 1
                snapshotKills = false
            }
            let killed = held || snapshotKills
            for id in refreshIDs + settleIDs + sleepIDs where calls.count(id) > 1 {
                return "\(named()): caller \(id) answered \(calls.count(id)) times"
            }
            let reads = s.served.lookup("x", killSwitchKey: "kill_switch")
            let servedKilled = s.served.killed || s.served.held
            if servedKilled != killed {
                return "\(named()): the kill switch reads \(servedKilled), the answers accepted say \(killed)"
            }
            if servedKilled, reads != nil { return "step \(step): a killed read returned \(String(describing: reads))" }
            if !servedKilled, !s.shutDown, let forced = s.safeMode == nil ? overridden : nil, reads != .int(forced) {
                return "\(named()): x reads \(String(describing: reads)), overridden to \(forced)"
            }
            if !servedKilled, !s.shutDown, overridden == nil || s.safeMode != nil, reads != (x == -1 ? nil : .int(x)) {
                return "\(named()): x reads \(String(describing: reads)), the snapshot served holds \(x)"
            }
        }
        // Shutdown answers everyone still waiting, once.
        _ = Self.perform(s.apply(.shutdown, at: helper.at(seconds + 1)))
        for id in refreshIDs + settleIDs where calls.count(id) != 1 {
            return "after shutdown: caller \(id) answered \(calls.count(id)) times"
        }
        for id in sleepIDs where calls.count(id) > 1 { return "after shutdown: sleep \(id) resumed \(calls.count(id)) times" }
        return nil
    }

    /// 1,000 sequences of 150 steps (1.2–1.4 s alone, 13 s inside the whole parallel suite in
    /// CI), on a thread of their own: the cooperative threads are two on a two-core machine, and
    /// the loopback tests that run beside this one need them. Under ThreadSanitizer, which has
    /// nothing to find in one thread's transitions, the first 100 (13.7 s in CI; 1,000 took
    /// 80 s beside a loaded build).
    @Test func randomSequencesKeepEveryPromise() async throws {
        let sequences: UInt64 = TestTiming.underThreadSanitizer ? 100 : 1_000
        let failures = try await blocking { () -> [String] in
            var failures: [String] = []
            for seed in 1...sequences {
                if let failure = run(seed: seed, steps: 150) { failures.append("seed \(seed): \(failure)") }
                if failures.count >= 5 { break }
            }
            return failures
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }
}
