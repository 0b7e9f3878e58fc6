import Foundation

/// Identify: a new context (or merged contexts) served at once from what is held — the
/// fallback file's snapshot, or the held flagd rules evaluated on the device — then fetched.
extension FeatureFlagProvider {
    /// Switches to `context`: serves its Last-Known-Good at once (code and bundled defaults
    /// if it has none — never the previous context's values), status `RECONCILING`, and wakes
    /// ``run()`` to fetch for it. Answers still on their way for earlier contexts are dropped.
    /// Calling it with the current context does nothing. Never waits on the disk.
    public func identify(_ context: EvaluationContext) {
        switchIdentity(to: context, members: [context])
    }

    /// Switches to several contexts at once — for instance a user's personal and business
    /// plans: each is fetched, and their flags are merged per key by ``Configuration/merge``
    /// (top tier wins, union, maximum, any…) into the one snapshot served. A kill switch in
    /// any of them applies. Like ``identify(_:)`` otherwise: the merged identity's
    /// Last-Known-Good is served at once and stored after each fetch, so an offline relaunch
    /// that identifies the same contexts finds it. One context (after removing duplicates) is
    /// the same as ``identify(_:)``; none does nothing.
    public func identify(merging contexts: [EvaluationContext]) {
        let ranked = configuration.merge.ranked(contexts)
        guard let first = ranked.first else { return }
        if ranked.count == 1 { return identify(first) }
        switchIdentity(to: ContextMerge.identity(of: ranked), members: ranked)
    }

    /// Sets aside what ``LastKnownGoodReader/unsignedHoldings(for:fetcher:store:)`` found for
    /// `context` on the I/O queue (an identify never waits on the disk), then emits its
    /// `fallback_tampered` events.
    private func setAsideLater(_ found: (snapshot: String?, rules: String?), of context: EvaluationContext) {
        let (store, io, publisher) = (self.store, self.io, self.publisher)
        io.async {
            let events = LastKnownGoodReader.tamperedEvents(
                found, setAsideSnapshot: { store.setAside(context) }, setAsideRules: { store.setAsideLocalRules() })
            for event in events { publisher.emit(event) }
        }
    }

    private func switchIdentity(to context: EvaluationContext, members: [EvaluationContext]) {
        // With trusted keys, what is held for the new context is checked first; what fails is
        // not served, and is set aside off this thread (an identify never waits on the disk).
        // (A merged identity's stored snapshot is a merge, signed by no one: it is made again
        // from its members' checked snapshots below.)
        let found: (snapshot: String?, rules: String?) =
            members.count == 1 ? LastKnownGoodReader.unsignedHoldings(for: context, fetcher: fetcher, store: store) : (nil, nil)
        if found.snapshot != nil || found.rules != nil {
            setAsideLater(found, of: context)
            transition(
                .identify(
                    context, members: members, lastKnownGood: base.prepare(.empty), source: .codeDefault, problem: nil, crashDigest: nil))
            return
        }
        var (lastKnownGood, source, problem) = LastKnownGoodReader.lastKnownGood(of: context.fingerprint, in: store, base: base)
        // Evaluated here, before the state's lock, so readers never wait for it.
        if members.count == 1, let evaluated = LastKnownGoodReader.evaluateHeldRules(for: context, fetcher: fetcher, store: store, base: base, at: wallClock()) {
            lastKnownGood = evaluated
            source = .fallback
            problem = nil
        } else if members.count > 1, let merged = evaluateHeldRules(merging: members, as: context) {
            // A merged identity: each member evaluated from the held rules, then merged as a
            // fetch would be — not the merged snapshot stored under older rules.
            lastKnownGood = merged
            source = .fallback
            problem = nil
        } else if members.count > 1, fetcher.checksSignatures {
            let (merged, tampered, problems) = verifiedMerge(of: members, as: context)
            lastKnownGood = base.prepare(merged ?? .empty)
            source = merged == nil ? .codeDefault : .fallback
            problem = nil
            for (member, problem) in zip(tampered, problems) { setAsideLater((snapshot: problem, rules: nil), of: member) }
        }
        var crashDigest: String?
        let (inSafeMode, healthy) = cell.inspect { ($0.safeMode != nil, $0.journal.healthy[context.fingerprint]) }
        if inSafeMode {
            // Safe mode holds for every identity: its healthy values, never its stored ones.
            if source == .fallback { crashDigest = LaunchJournal.digest(lastKnownGood.snapshot) }
            lastKnownGood = base.prepare(healthy ?? .empty)
            source = healthy == nil ? .codeDefault : .fallback
        }
        transition(
            .identify(context, members: members, lastKnownGood: lastKnownGood, source: source, problem: problem, crashDigest: crashDigest))
    }

    /// The merged identity `identity` of `members`, each member's values evaluated from the held
    /// definitions and merged by ``Configuration/merge``; nil when no definitions are held or
    /// the fetcher does not evaluate locally.
    func evaluateHeldRules(merging members: [EvaluationContext], as identity: EvaluationContext) -> PreparedSnapshot? {
        LastKnownGoodReader.evaluateHeldRules(
            merging: members, as: identity, fetcher: fetcher, store: store, base: base, merge: configuration.merge, at: wallClock())
    }
}
