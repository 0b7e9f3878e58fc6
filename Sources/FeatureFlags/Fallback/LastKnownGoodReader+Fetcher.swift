import Foundation

/// Reading the fallback file as a fetcher's provider reads it offline: with trusted keys, what
/// it holds is checked against them; flag rules held for evaluation on the device are
/// evaluated for the context served. Shared by ``FeatureFlagProvider`` (which also sets aside
/// what fails) and ``FallbackClient`` given the app's fetcher (which never writes the file: the
/// app's provider does that at its next launch or identify).
extension LastKnownGoodReader {
    /// ``lastKnownGood(of:in:base:)`` read as `fetcher`'s provider reads it offline. Rules held
    /// for evaluation on the device are evaluated for `context` (a context never fetched gets
    /// its values too). With trusted keys, the stored snapshot is served only when it is what a
    /// trusted key signed, and held rules only when they verify; whatever fails leaves bundled
    /// and code defaults, and the event says why. Without `fetcher`: ``lastKnownGood(of:in:base:)``.
    ///
    /// A merged identity (``ContextMerge/identity(of:)``) is made again from its members, by
    /// `merge`, as its provider makes it: each member evaluated from held rules, or with trusted
    /// keys each member's stored answer checked — never the stored merge, which no key signed
    /// and which older rules made.
    static func lastKnownGood(
        of fingerprint: String?, context: EvaluationContext?, in store: LastKnownGoodStore, base: ServingBase,
        checkedBy fetcher: FlagFetcher?, merge: ContextMerge = ContextMerge(), at date: Date
    ) -> (prepared: PreparedSnapshot, source: FlagSource, problem: FlagEvent?) {
        guard let fetcher, let fingerprint else { return lastKnownGood(of: fingerprint, in: store, base: base) }
        if let context, let members = members(of: context) {
            return mergedLastKnownGood(
                of: members, as: context, fingerprint: fingerprint, in: store, base: base, checkedBy: fetcher, merge: merge, at: date)
        }
        // Evaluated only where it is served: never from rules that have not passed the check.
        func evaluated() -> PreparedSnapshot? {
            context.flatMap { evaluateHeldRules(for: $0, fetcher: fetcher, store: store, base: base, at: date) }
        }
        guard fetcher.checksSignatures else {
            let stored = lastKnownGood(of: fingerprint, in: store, base: base)
            return evaluated().map { ($0, .fallback, nil) } ?? stored
        }
        func defaults(_ problem: FlagEvent?) -> (prepared: PreparedSnapshot, source: FlagSource, problem: FlagEvent?) {
            (base.prepare(.empty), .codeDefault, problem)
        }
        if !fetcher.evaluatesLocally, case .found(let stored)? = store.lookup(fingerprint), let stamp = stored.snapshot.signature,
            stamp.envelope.isEmpty
        {
            // What a merge of signed answers carries (`identify(merging:)`), read without the
            // merged identity that names its members (a client given no context).
            return defaults(.fallbackWarning(
                reason: "the stored values for this context carry no signed answer of their own (a merge of several contexts' values, checked only when the merged identity is given as the context): bundled and code defaults are served"))
        }
        let found = unsignedHoldings(of: fingerprint, decodingFor: context ?? .anonymous, fetcher: fetcher, store: store)
        if found.snapshot != nil || found.rules != nil {
            return defaults(tamperedEvents(found, setAsideSnapshot: { nil }, setAsideRules: { nil }).first)
        }
        if fetcher.evaluatesLocally, store.holdsLocalRules {
            // Evaluated on the device: a stored evaluation is never served as it is.
            guard let evaluated = evaluated() else {
                return defaults(.fallbackWarning(
                    reason: "the flag rules held for evaluation on the device verify, but this client was given no context to evaluate them for: bundled and code defaults are served"))
            }
            return (evaluated, .fallback, nil)
        }
        return lastKnownGood(of: fingerprint, in: store, base: base)
    }

    /// What is wrong with what the fallback file holds for `context` — its snapshot, and the
    /// rules held for evaluation on the device — when keys are trusted: nil for each
    /// part that is what a trusted key signed (or when no keys are configured).
    static func unsignedHoldings(
        for context: EvaluationContext, fetcher: FlagFetcher, store: LastKnownGoodStore
    ) -> (snapshot: String?, rules: String?) {
        unsignedHoldings(of: context.fingerprint, decodingFor: context, fetcher: fetcher, store: store)
    }

    /// ``unsignedHoldings(for:fetcher:store:)`` for the snapshot stored under `fingerprint`;
    /// `context` decodes its signed answer (a client given no context reads the most recent
    /// fingerprint's: decoding a signed answer does not depend on the context).
    static func unsignedHoldings(
        of fingerprint: String, decodingFor context: EvaluationContext, fetcher: FlagFetcher, store: LastKnownGoodStore
    ) -> (snapshot: String?, rules: String?) {
        guard fetcher.checksSignatures else { return (nil, nil) }
        var rules: String?
        if let endpoint = fetcher.localEvaluation, store.holdsLocalRules {
            rules = store.localRules(readBy: endpoint).map(fetcher.heldRulesSignatureProblem) ?? "the held rules no longer read"
        }
        guard case .found(let stored)? = store.lookup(fingerprint) else { return (nil, rules) }
        if fetcher.evaluatesLocally {
            // Evaluated on the device: served only as evaluated again from verified rules.
            return (rules != nil || !store.holdsLocalRules ? "it was evaluated from rules that cannot be verified" : nil, rules)
        }
        return (fetcher.storedSignatureProblem(stored.snapshot, for: context), rules)
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

    /// `context`'s values from the flag definitions held for local evaluation, so a context
    /// never fetched is served correctly without the network. Nil when the store holds no
    /// definitions (asked first: nothing is parsed or cast for apps that evaluate remotely),
    /// when the fetcher does not evaluate locally, or when the context's stored snapshot was
    /// fetched under the held definitions' tag (served as it is: no parse at launch).
    static func evaluateHeldRules(
        for context: EvaluationContext, fetcher: FlagFetcher, store: LastKnownGoodStore, base: ServingBase, at date: Date
    ) -> PreparedSnapshot? {
        guard store.holdsLocalRules, fetcher.evaluatesLocally else { return nil }
        // With trusted keys the stored snapshot is not served as it is: evaluated again from
        // the verified rules.
        if !fetcher.checksSignatures, let stored = store.lastKnownGood(for: context), let tag = stored.etag, tag == store.localRulesTag {
            return nil
        }
        guard let endpoint = fetcher.localEvaluation, let rules = store.localRules(readBy: endpoint) else { return nil }
        return base.prepare(rules.snapshot(for: context, at: date))
    }

    /// The members of the merged identity `identity` (``ContextMerge/identity(of:)``), ranked;
    /// nil for a single context.
    static func members(of identity: EvaluationContext) -> [EvaluationContext]? {
        guard case .list(let values)? = identity.attributes["merged_contexts"], values.count > 1 else { return nil }
        let members = values.compactMap(EvaluationContext.init(flagValue:))
        guard members.count == values.count, ContextMerge.identity(of: members).fingerprint == identity.fingerprint else { return nil }
        return members
    }

    /// A merged identity's values read as its provider reads them offline (see
    /// ``lastKnownGood(of:context:in:base:checkedBy:merge:at:)``).
    private static func mergedLastKnownGood(
        of members: [EvaluationContext], as identity: EvaluationContext, fingerprint: String, in store: LastKnownGoodStore,
        base: ServingBase, checkedBy fetcher: FlagFetcher, merge: ContextMerge, at date: Date
    ) -> (prepared: PreparedSnapshot, source: FlagSource, problem: FlagEvent?) {
        func defaults(_ problem: FlagEvent?) -> (prepared: PreparedSnapshot, source: FlagSource, problem: FlagEvent?) {
            (base.prepare(.empty), .codeDefault, problem)
        }
        if fetcher.evaluatesLocally {
            if fetcher.checksSignatures, let problem = unsignedHoldings(of: fingerprint, decodingFor: identity, fetcher: fetcher, store: store).rules {
                return defaults(tamperedEvents((snapshot: nil, rules: problem), setAsideSnapshot: { nil }, setAsideRules: { nil }).first)
            }
            if let merged = evaluateHeldRules(merging: members, as: identity, fetcher: fetcher, store: store, base: base, merge: merge, at: date) {
                return (merged, .fallback, nil)
            }
            guard fetcher.checksSignatures else { return lastKnownGood(of: fingerprint, in: store, base: base) }
            return defaults(.fallbackWarning(
                reason: "no flag rules are held to evaluate this merged identity's members on the device: bundled and code defaults are served"))
        }
        guard fetcher.checksSignatures else { return lastKnownGood(of: fingerprint, in: store, base: base) }
        let (merged, _, problems) = verifiedMerge(
            of: members, as: identity, fetcher: fetcher, store: store, merge: merge, killSwitchKey: base.killSwitchKey)
        if let merged { return (base.prepare(merged), .fallback, nil) }
        if let problem = problems.first {
            return defaults(.fallbackTampered(
                reason: "the stored snapshot of a member of this merged identity is not what a trusted key signed: \(problem)", keptAt: nil))
        }
        return defaults(.fallbackWarning(
            reason: "not every member of this merged identity has stored values: bundled and code defaults are served"))
    }

    /// The merged identity `identity` of `members`, each member's values evaluated from the held
    /// rules and merged by `merge`; nil when no rules are held or `fetcher` does not evaluate locally.
    static func evaluateHeldRules(
        merging members: [EvaluationContext], as identity: EvaluationContext, fetcher: FlagFetcher, store: LastKnownGoodStore,
        base: ServingBase, merge: ContextMerge, at date: Date
    ) -> PreparedSnapshot? {
        guard store.holdsLocalRules, let endpoint = fetcher.localEvaluation, let rules = store.localRules(readBy: endpoint) else {
            return nil
        }
        let snapshots = members.map { rules.snapshot(for: $0, at: date) }
        var merged = merge.merge(Array(zip(members, snapshots)), killSwitchKey: base.killSwitchKey, identity: identity)
        merged.heldRules = rules
        return base.prepare(merged)
    }

    /// A merged identity's values when keys are trusted. Its stored snapshot is a merge, signed
    /// by no one, so it is not served as it is: the merge is made again from the members' stored
    /// snapshots, each checked as a single context's is. Nil when a member holds no snapshot or
    /// one that fails its check; `tampered` names those that fail, and `problems` says why.
    static func verifiedMerge(
        of members: [EvaluationContext], as identity: EvaluationContext, fetcher: FlagFetcher, store: LastKnownGoodStore,
        merge: ContextMerge, killSwitchKey: String
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
        return (merge.merge(snapshots, killSwitchKey: killSwitchKey, identity: identity), [], [])
    }
}
