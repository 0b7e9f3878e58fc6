import Foundation

/// Signed at rest: with trusted keys, what the fallback file holds is checked against them
/// before it is served — at launch and at every identify (Docs/Security.md, "Signed flags").
extension FeatureFlagProvider {
    /// What is wrong with what the fallback file holds for `context` — its snapshot, and the
    /// rules held for evaluation on the device — when keys are trusted: nil for each
    /// part that is what a trusted key signed (or when no keys are configured).
    static func unsignedHoldings(
        for context: EvaluationContext, fetcher: FlagFetcher, store: LastKnownGoodStore
    ) -> (snapshot: String?, rules: String?) {
        guard fetcher.checksSignatures else { return (nil, nil) }
        var rules: String?
        if let endpoint = fetcher.localEvaluation, store.holdsLocalRules {
            rules = store.localRules(readBy: endpoint).map(fetcher.heldRulesSignatureProblem) ?? "the held rules no longer read"
        }
        guard let stored = store.lastKnownGood(for: context) else { return (nil, rules) }
        if fetcher.evaluatesLocally {
            // Evaluated on the device: served only as evaluated again from verified rules.
            return (rules != nil || !store.holdsLocalRules ? "it was evaluated from rules that cannot be verified" : nil, rules)
        }
        return (fetcher.storedSignatureProblem(stored.snapshot, for: context), rules)
    }

    /// A merged identity's values when keys are trusted. Its stored snapshot is a merge, signed
    /// by no one, so it is not served as it is: the merge is made again from the members' stored
    /// snapshots, each checked as a single context's is. Nil when a member holds no snapshot or
    /// one that fails its check; `tampered` names those that fail, and `problems` says why (the
    /// caller sets them aside).
    func verifiedMerge(
        of members: [EvaluationContext], as identity: EvaluationContext
    ) -> (merged: FlagSnapshot?, tampered: [EvaluationContext], problems: [String]) {
        var snapshots: [(context: EvaluationContext, snapshot: FlagSnapshot)] = []
        var tampered: [EvaluationContext] = []
        var problems: [String] = []
        for member in members {
            guard let stored = store.lastKnownGood(for: member) else { continue }
            if let problem = fetcher.storedSignatureProblem(stored.snapshot, for: member) {
                tampered.append(member)
                problems.append(problem)
            } else {
                snapshots.append((member, stored.snapshot))
            }
        }
        guard snapshots.count == members.count else { return (nil, tampered, problems) }
        return (configuration.merge.merge(snapshots, killSwitchKey: base.killSwitchKey, identity: identity), [], [])
    }

    /// The events for what ``unsignedHoldings(for:fetcher:store:)`` found, after setting it
    /// aside with `setAside` (now at launch; on the I/O queue at an identify).
    static func tamperedEvents(
        _ found: (snapshot: String?, rules: String?), setAsideSnapshot: () -> String?, setAsideRules: () -> String?
    ) -> [FlagEvent] {
        var events: [FlagEvent] = []
        if let problem = found.rules {
            events.append(.fallbackTampered(
                reason: "the flag rules held for evaluation on the device are not what a trusted key signed: \(problem)",
                keptAt: setAsideRules()))
        }
        if let problem = found.snapshot {
            events.append(.fallbackTampered(
                reason: "the stored snapshot for this context is not what a trusted key signed: \(problem)", keptAt: setAsideSnapshot()))
        }
        return events
    }
}
