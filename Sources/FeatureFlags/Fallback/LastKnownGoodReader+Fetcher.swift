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
    static func lastKnownGood(
        of fingerprint: String?, context: EvaluationContext?, in store: LastKnownGoodStore, base: ServingBase,
        checkedBy fetcher: FlagFetcher?, at date: Date
    ) -> (prepared: PreparedSnapshot, source: FlagSource, problem: FlagEvent?) {
        guard let fetcher, let fingerprint else { return lastKnownGood(of: fingerprint, in: store, base: base) }
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
            // What a merge of signed answers carries (`identify(merging:)`): the merge policy is
            // the provider's, so only the provider can make it again from the members' answers.
            return defaults(.fallbackWarning(
                reason: "the stored values for this context carry no signed answer of their own (a merge of several contexts' values, which only the provider that merges them can check): bundled and code defaults are served"))
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
}
