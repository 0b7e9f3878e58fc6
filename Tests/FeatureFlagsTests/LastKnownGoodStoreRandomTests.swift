import Foundation
import Testing
import TestSupport
@testable import FeatureFlags

/// The fallback file under random sequences of saves (five contexts, room for three), removals,
/// kill holds and relaunches, by two stores writing the same file (an app and its extension),
/// against a model of what the file must hold: the contexts saved most recently, most recent
/// first, each with the last snapshot saved for it, and the kill hold last set. After every
/// step the store that wrote and a store newly opened on the file (a relaunch, or a reader)
/// must both agree with the model: no write loses another's. Deterministic: each seed is one
/// sequence; every write is a real one (lock, fsync, rename).
@Suite("Fallback file under random sequences")
struct LastKnownGoodStoreRandomTests {
    let contexts = (0..<5).map { EvaluationContext(targetingKey: "user-\($0)") }
    let capacity = 3

    /// What `store` holds, as (fingerprint, version) most recent first, and its kill hold.
    func contents(_ store: LastKnownGoodStore) -> ([String], [String?], Bool) {
        let fingerprints = store.fingerprints
        let versions = fingerprints.map { fingerprint in
            contexts.first { $0.fingerprint == fingerprint }.flatMap { store.lastKnownGood(for: $0)?.snapshot.version }
        }
        return (fingerprints, versions, store.killHold != nil)
    }

    /// One sequence; the first disagreement with the model, if any.
    func run(seed: UInt64, steps: Int) throws -> String? {
        var rng = SplitMix(seed: seed)
        let dir = TempDir()
        let file = dir.url("flags.lkg")
        // Two writers; the kill hold is only ever set by the first (the provider's store), so
        // its memory of the hold is the file's.
        var writers = [LastKnownGoodStore(fileURL: file, capacity: capacity), LastKnownGoodStore(fileURL: file, capacity: capacity)]
        // The model: (fingerprint, version), most recently saved first; the kill hold.
        var entries: [(fingerprint: String, version: String)] = []
        var held = false
        for step in 0..<steps {
            let what: String
            var w = Int.random(in: 0..<2, using: &rng)
            var store: LastKnownGoodStore { writers[w] }
            switch Int.random(in: 0..<10, using: &rng) {
            case 0...5:
                let context = contexts.randomElement(using: &rng) ?? contexts[0]
                let version = "v\(step)"
                let snapshot = FlagSnapshot(values: ["x": .int(step)], version: version, fetchedAt: Date(timeIntervalSince1970: 1_750_000_000))
                // Now and then (first writer only) the save also sets or releases the kill hold.
                var hold: KillHold?? = nil
                if w == 0, Int.random(in: 0..<4, using: &rng) == 0 { hold = .some(held ? nil : KillHold(since: Date(), context: context.fingerprint)) }
                try store.save(StoredFlags(snapshot: snapshot, etag: nil), for: context, killHold: hold)
                entries.removeAll { $0.fingerprint == context.fingerprint }
                entries.insert((context.fingerprint, version), at: 0)
                if entries.count > capacity { entries.removeLast(entries.count - capacity) }
                if let hold { held = hold != nil }
                what = "writer \(w): save \(context.targetingKey ?? "") \(version)\(hold == nil ? "" : held ? " + hold" : " + release")"
            case 6:
                let context = contexts.randomElement(using: &rng) ?? contexts[0]
                try store.remove(context)
                entries.removeAll { $0.fingerprint == context.fingerprint }
                what = "writer \(w): remove \(context.targetingKey ?? "")"
            case 7:
                w = 0
                held.toggle()
                try store.setKillHold(held ? KillHold(since: Date(), context: "c") : nil)
                what = held ? "hold" : "release"
            case 8:
                if Int.random(in: 0..<3, using: &rng) == 0 {
                    try store.removeAll()
                    entries.removeAll()
                    what = "writer \(w): remove all"
                } else {
                    what = "nothing"
                }
            default:
                writers[w] = LastKnownGoodStore(fileURL: file, capacity: capacity)
                what = "writer \(w): relaunch"
            }
            let expected = (entries.map(\.fingerprint), entries.map { Optional($0.version) }, held)
            // The other writer learns of a write at its own next write (or relaunch): only the
            // store that acted is compared, beside a store opened now.
            var views = [("a store opened now", contents(LastKnownGoodStore(fileURL: file, capacity: capacity)))]
            if what != "nothing" { views.append(("the store that acted", contents(store))) }
            for (name, seen) in views {
                if seen.0 != expected.0 || seen.1 != expected.1 || seen.2 != expected.2 {
                    return "step \(step) (\(what)): \(name) holds \(seen.1.map { $0 ?? "nil" }) hold \(seen.2), the model \(expected.1.map { $0 ?? "nil" }) hold \(expected.2)"
                }
            }
        }
        return nil
    }

    /// 20 sequences of 40 steps (800 steps, most of them a write of the file), on a thread of
    /// their own: 0.5 s alone, 6 s inside the whole parallel suite in CI.
    @Test func randomSequencesKeepWhatWasSaved() async throws {
        let failures = try await blocking { () throws -> [String] in
            var failures: [String] = []
            for seed in UInt64(1)...20 {
                if let failure = try run(seed: seed, steps: 40) { failures.append("seed \(seed): \(failure)") }
            }
            return failures
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }
}
