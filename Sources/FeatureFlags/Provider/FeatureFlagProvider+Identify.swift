import Foundation

/// Identify: a new context served at once from what is held, then fetched.
extension FeatureFlagProvider {
    /// Switches to `context`: serves its Last-Known-Good at once (never the previous context's values),
    /// status `RECONCILING`, and wakes ``run()`` to fetch. No-op for the current context; never waits on disk.
    public func identify(_ context: EvaluationContext) {
        switchIdentity(to: context, members: [context])
    }

    /// Switches to several contexts at once: each is fetched and their flags merged by ``Configuration/merge``;
    /// a kill switch in any applies. Otherwise like ``identify(_:)``; none does nothing.
    public func identify(merging contexts: [EvaluationContext]) {
        let ranked = configuration.merge.ranked(contexts)
        guard let first = ranked.first else { return }
        if ranked.count == 1 { return identify(first) }
        switchIdentity(to: ContextMerge.identity(of: ranked), members: ranked)
    }

    /// What may be served for `context` (see ``HeldAnswer``); tampered items are set aside on the I/O queue.
    func heldAnswer(for context: EvaluationContext) -> HeldAnswer {
        let answer = LastKnownGoodReader.answer(
            for: context, fingerprint: context.fingerprint, in: store, base: base, checkedBy: fetcher.policy, merge: configuration.merge,
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
