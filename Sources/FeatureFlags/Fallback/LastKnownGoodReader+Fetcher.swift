import Foundation

/// How a client that only reads serves the fallback file as the app's provider would offline:
/// a ``FallbackClient`` given the app's fetcher evaluates the flag rules held for evaluation on
/// the device for its context, and with trusted keys checks what the file holds against them —
/// but never sets anything aside (the file is the app's; its provider does that at its next
/// launch or identify).
extension LastKnownGoodReader {
    /// ``lastKnownGood(of:in:base:)`` read as `fetcher`'s provider reads it offline. Rules held
    /// for evaluation on the device are evaluated for `context` (a context never fetched gets
    /// its values too). With trusted keys, the stored snapshot is served only when it is what a
    /// trusted key signed, and held rules only when they verify; whatever fails leaves bundled
    /// and code defaults, and the event says why. Without `fetcher`: ``lastKnownGood(of:in:base:)``.
    static func lastKnownGood(
        of fingerprint: String?, context: EvaluationContext?, in store: LastKnownGoodStore, base: ServingBase,
        checkedBy fetcher: FlagFetcher?, at date: Date
    ) -> (prepared: PreparedSnapshot, source: FlagSource, problem: FlagEvent?) {
        guard let fetcher, let fingerprint else { return lastKnownGood(of: fingerprint, in: store, base: base) }
        guard fetcher.checksSignatures else {
            let stored = lastKnownGood(of: fingerprint, in: store, base: base)
            guard let context, let evaluated = evaluateHeldRules(
                for: context, fetcher: fetcher, store: store, base: base, at: date)
            else { return stored }
            return (evaluated, .fallback, nil)
        }
        func defaults(_ problem: FlagEvent?) -> (prepared: PreparedSnapshot, source: FlagSource, problem: FlagEvent?) {
            (base.prepare(.empty), .codeDefault, problem)
        }
        func refused(snapshot: String? = nil, rules: String? = nil) -> (prepared: PreparedSnapshot, source: FlagSource, problem: FlagEvent?) {
            defaults(tamperedEvents((snapshot, rules), setAsideSnapshot: { nil }, setAsideRules: { nil }).first)
        }
        if let endpoint = fetcher.localEvaluation {
            // Evaluated on the device: a stored evaluation is never served as it is.
            guard store.holdsLocalRules else {
                if store.lookup(fingerprint) == nil { return defaults(nil) }
                return refused(snapshot: "it was evaluated from rules that cannot be verified")
            }
            guard let rules = store.localRules(readBy: endpoint) else { return refused(rules: "the held rules no longer read") }
            if let problem = fetcher.heldRulesSignatureProblem(rules) { return refused(rules: problem) }
            guard let context else {
                return defaults(.fallbackWarning(
                    reason: "the flag rules held for evaluation on the device verify, but this client was given no context to evaluate them for: bundled and code defaults are served"))
            }
            return (base.prepare(rules.snapshot(for: context, at: date)), .fallback, nil)
        }
        guard case .found(let stored)? = store.use(fingerprint) else { return lastKnownGood(of: fingerprint, in: store, base: base) }
        if let stamp = stored.snapshot.signature, stamp.envelope.isEmpty {
            // What a merge of signed answers carries (`identify(merging:)`): the merge policy is
            // the provider's, so only the provider can make it again from the members' answers.
            return defaults(.fallbackWarning(
                reason: "the stored values for this context carry no signed answer of their own (a merge of several contexts' values, which only the provider that merges them can check): bundled and code defaults are served"))
        }
        if let problem = fetcher.storedSignatureProblem(stored.snapshot, for: context ?? .anonymous) {
            return refused(snapshot: problem)
        }
        return (base.prepare(stored.snapshot), .fallback, nil)
    }

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
}
