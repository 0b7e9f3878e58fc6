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

    /// What may be served for `context` (see ``HeldAnswer``); what fails the trust check is
    /// set aside on the I/O queue (an identify never waits on the disk), then its
    /// `fallback_tampered` events are emitted. Computed before the state's lock, so readers
    /// never wait for it.
    func heldAnswer(for context: EvaluationContext) -> HeldAnswer {
        let answer = LastKnownGoodReader.answer(
            for: context, fingerprint: context.fingerprint, in: store, base: base, checkedBy: fetcher, merge: configuration.merge,
            at: wallClock())
        if !answer.tampered.isEmpty {
            let (store, io, publisher) = (self.store, self.io, self.publisher)
            io.async {
                for event in answer.tamperedEvents(settingAside: { Self.setAside($0, in: store) }) { publisher.emit(event) }
            }
        }
        return answer
    }

    /// Sets `found` aside in `store`; where it was kept.
    static func setAside(_ found: HeldAnswer.Tampered, in store: LastKnownGoodStore) -> String? {
        switch found {
        case .rules: return store.setAsideLocalRules()
        case .snapshot(let context?, _, _): return store.setAside(context)
        case .snapshot(nil, _, _): return nil
        }
    }

    private func switchIdentity(to context: EvaluationContext, members: [EvaluationContext]) {
        // In safe mode the transition serves the context's healthy values instead.
        let answer = heldAnswer(for: context)
        transition(.identify(context, members: members, lastKnownGood: answer.prepared, source: answer.source, problem: answer.problem))
    }
}
