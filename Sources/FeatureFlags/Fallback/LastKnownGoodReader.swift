import Foundation

/// What the device may serve for a context, decided alike for the provider and ``FallbackClient``:
/// with trusted keys only what a trusted key signed, else defaults and ``HeldAnswer/tampered``.
/// A merged identity is rebuilt from its members, never served from the unsigned stored merge.
struct HeldAnswer: Sendable {
    /// The values to serve, prepared.
    var prepared: PreparedSnapshot
    /// `fallback`, or `code_default` when nothing held may be served.
    var source: FlagSource
    /// Whether the kill switch is held on the device (``KillHold``).
    var held = false
    /// What the reading found that is not tampering: an unreadable snapshot, or why defaults are served.
    var problem: FlagEvent?
    /// What failed the signature check.
    var tampered: [Tampered] = []

    /// Bundled and code defaults alone (`code_default`), with why.
    static func defaults(_ base: ServingBase, problem: FlagEvent? = nil, tampered: [Tampered] = []) -> HeldAnswer {
        HeldAnswer(prepared: base.prepare(.empty), source: .codeDefault, problem: problem, tampered: tampered)
    }

    /// Something held that is not what a trusted key signed.
    enum Tampered: Sendable {
        /// The stored snapshot of `context` (nil: none given); `member`: of a merged identity.
        case snapshot(of: EvaluationContext?, member: Bool, problem: String)
        /// The flag rules held for evaluation on the device.
        case rules(problem: String)
    }

    /// The events for ``tampered``, each after `setAside` (which returns where it was kept, or nil).
    func tamperedEvents(settingAside setAside: (Tampered) -> String?) -> [FlagEvent] {
        tampered.map { found in
            let reason: String
            switch found {
            case .rules(let problem):
                reason = "the flag rules held for evaluation on the device are not what a trusted key signed: \(problem)"
            case .snapshot(_, let member, let problem):
                reason = "the stored snapshot \(member ? "of a member of this merged identity" : "for this context") is not what a trusted key signed: \(problem)"
            }
            return .fallbackTampered(reason: reason, keptAt: setAside(found))
        }
    }
}

/// How a client serving from a ``LastKnownGoodStore`` starts: bundled defaults and load events.
struct LastKnownGoodReader {
    /// The bundled defaults and the kill-switch key.
    let base: ServingBase
    /// What loading found, to emit once the client exists.
    private(set) var events: [FlagEvent] = []

    /// Reads `bundledDefaults` and notes what `store` found at load.
    init(store: LastKnownGoodStore, bundledDefaults: BundledDefaults, killSwitchKey: String) {
        switch store.loadOutcome {
        case .loaded(let contexts, let bytes): events.append(.fallbackLoaded(contexts: contexts, bytes: bytes))
        case .noFile: break
        case .rejected(let reason, let keptAt): events.append(.fallbackRejected(reason: reason, keptAt: keptAt))
        case .unavailable(let reason): events.append(.fallbackRejected(reason: reason, keptAt: store.fileURL.fileSystemPath))
        }
        if let warning = store.loadWarning { events.append(.fallbackWarning(reason: warning)) }
        var defaults: [String: FlagEntry] = [:]
        switch bundledDefaults.load() {
        case .success(let entries): defaults = entries
        case .failure(let error): events.append(.error(.parseError, message: error.message))
        }
        base = ServingBase(defaults: defaults, killSwitchKey: killSwitchKey)
    }

    /// What may be served for `context` (nil: the snapshot under `fingerprint`); marks it used.
    static func answer(
        for context: EvaluationContext?, fingerprint: String?, in store: LastKnownGoodStore, base: ServingBase,
        checkedBy policy: DevicePolicy?, merge: ContextMerge, at date: Date
    ) -> HeldAnswer {
        var answer = decide(for: context, fingerprint: fingerprint, in: store, base: base, checkedBy: policy, merge: merge, at: date)
        answer.held = store.killHold != nil
        return answer
    }

    private static func decide(
        for context: EvaluationContext?, fingerprint: String?, in store: LastKnownGoodStore, base: ServingBase,
        checkedBy policy: DevicePolicy?, merge: ContextMerge, at date: Date
    ) -> HeldAnswer {
        func served(_ prepared: PreparedSnapshot) -> HeldAnswer { HeldAnswer(prepared: prepared, source: .fallback) }
        func stored() -> HeldAnswer { storedAnswer(fingerprint, in: store, base: base) }
        guard let policy, let fingerprint else { return stored() }
        if let context, policy.servesSet {
            return setAnswer(for: context, in: store, base: base, policy: policy, merge: merge) ?? (policy.checksSignatures ? .defaults(base) : stored())
        }
        if let context, let members = members(of: context) {
            return mergedAnswer(of: members, as: context, fingerprint: fingerprint, store: store, base: base, policy: policy, merge: merge, at: date)
        }
        // Evaluated only where it is served: never from rules that have not passed the check.
        func evaluated() -> PreparedSnapshot? {
            context.flatMap { evaluateHeldRules(for: $0, policy: policy, store: store, base: base, at: date) }
        }
        guard policy.checksSignatures else { return evaluated().map(served) ?? stored() }
        if !policy.evaluatesLocally, case .found(let stored)? = store.lookup(fingerprint), let stamp = stored.snapshot.signature,
            stamp.envelope.isEmpty
        {
            return .defaults(base, problem: .fallbackWarning(
                reason: "the stored values for this context carry no signed answer of their own (a merge of several contexts' values, checked only when the merged identity is given as the context): bundled and code defaults are served"))
        }
        let found = unsignedHoldings(of: fingerprint, decodingFor: context ?? .anonymous, policy: policy, store: store)
        if found.snapshot != nil || found.rules != nil {
            var tampered: [HeldAnswer.Tampered] = found.rules.map { [.rules(problem: $0)] } ?? []
            if let problem = found.snapshot { tampered.append(.snapshot(of: context, member: false, problem: problem)) }
            return .defaults(base, tampered: tampered)
        }
        if policy.evaluatesLocally, store.holdsLocalRules {
            guard let evaluated = evaluated() else {
                return .defaults(base, problem: .fallbackWarning(
                    reason: "the flag rules held for evaluation on the device verify, but this client was given no context to evaluate them for: bundled and code defaults are served"))
            }
            return served(evaluated)
        }
        return stored()
    }

    /// A set's values (``ServiceStrategy``), each service's from its own held values, combined as a fetch combines them;
    /// nil when no service holds any. Held values that may not stand in for their service (unsigned) are left out.
    private static func setAnswer(
        for context: EvaluationContext, in store: LastKnownGoodStore, base: ServingBase, policy: DevicePolicy, merge: ContextMerge
    ) -> HeldAnswer? {
        let names = policy.serviceNames
        var any = false
        var problem: FlagEvent?
        let snapshot = policy.combinedSet(context, members: members(of: context) ?? [context], merge: merge, killSwitchKey: base.killSwitchKey) {
            member, index in
            guard case .found(let stored)? = store.use(policy.serviceKey(member.fingerprint, service: index)) else {
                return ServiceValues(name: names[index], snapshot: nil)
            }
            if let reason = policy.heldServiceProblem(stored.snapshot, service: index, for: member) {
                problem = .fallbackWarning(reason: "the values held for service \(names[index]) are not served: \(reason)")
                return ServiceValues(name: names[index], snapshot: nil)
            }
            any = true
            return ServiceValues(name: names[index], snapshot: stored.snapshot)
        }.snapshot
        guard any else { return nil }
        var answer = HeldAnswer(prepared: base.prepare(snapshot), source: .fallback)
        answer.problem = problem
        return answer
    }

    /// The snapshot stored under `fingerprint`, marked used, or the defaults alone with why.
    private static func storedAnswer(_ fingerprint: String?, in store: LastKnownGoodStore, base: ServingBase) -> HeldAnswer {
        let none = HeldAnswer.defaults(base)
        guard let fingerprint else { return none }
        switch store.use(fingerprint) {
        case .found(let stored)?: return HeldAnswer(prepared: base.prepare(stored.snapshot), source: .fallback)
        case .unreadable(let error)?:
            var unreadable = none
            unreadable.problem = .fallbackRejected(reason: "stored snapshot undecodable: \(error.message)", keptAt: nil)
            return unreadable
        case nil: return none
        }
    }

    /// Why the snapshot and held rules under `fingerprint` fail the signature check (nil: verified).
    static func unsignedHoldings(
        of fingerprint: String, decodingFor context: EvaluationContext, policy: DevicePolicy, store: LastKnownGoodStore
    ) -> (snapshot: String?, rules: String?) {
        guard policy.checksSignatures else { return (nil, nil) }
        var rules: String?
        if let endpoint = policy.localEvaluation, store.holdsLocalRules {
            rules = store.localRules(readBy: endpoint).map(policy.heldRulesSignatureProblem) ?? "the held rules no longer read"
        }
        guard case .found(let stored)? = store.lookup(fingerprint) else { return (nil, rules) }
        if policy.evaluatesLocally {
            // Evaluated on the device: served only as evaluated again from verified rules.
            return (rules != nil || !store.holdsLocalRules ? "it was evaluated from rules that cannot be verified" : nil, rules)
        }
        return (policy.storedSignatureProblem(stored.snapshot, for: context), rules)
    }

    /// `context`'s values from held rules; nil if none apply or the unsigned stored snapshot is current.
    static func evaluateHeldRules(
        for context: EvaluationContext, policy: DevicePolicy, store: LastKnownGoodStore, base: ServingBase, at date: Date
    ) -> PreparedSnapshot? {
        guard store.holdsLocalRules, policy.evaluatesLocally else { return nil }
        if !policy.checksSignatures, let stored = store.lastKnownGood(for: context), let tag = stored.etag, tag == store.localRulesTag {
            return nil
        }
        guard let endpoint = policy.localEvaluation, let rules = store.localRules(readBy: endpoint) else { return nil }
        return base.prepare(rules.snapshot(for: context, at: date))
    }

    /// The ranked members of a merged identity (``ContextMerge/identity(of:)``); nil for one context.
    static func members(of identity: EvaluationContext) -> [EvaluationContext]? {
        guard case .list(let values)? = identity.attributes["merged_contexts"], values.count > 1 else { return nil }
        let members = values.compactMap(EvaluationContext.init(flagValue:))
        guard members.count == values.count, ContextMerge.identity(of: members).fingerprint == identity.fingerprint else { return nil }
        return members
    }

    /// A merged identity's values (see ``HeldAnswer``).
    private static func mergedAnswer(
        of members: [EvaluationContext], as identity: EvaluationContext, fingerprint: String, store: LastKnownGoodStore,
        base: ServingBase, policy: DevicePolicy, merge: ContextMerge, at date: Date
    ) -> HeldAnswer {
        func stored() -> HeldAnswer { storedAnswer(fingerprint, in: store, base: base) }
        if policy.evaluatesLocally {
            if policy.checksSignatures, let problem = unsignedHoldings(of: fingerprint, decodingFor: identity, policy: policy, store: store).rules {
                return .defaults(base, tampered: [.rules(problem: problem)])
            }
            if let merged = evaluateHeldRules(merging: members, as: identity, policy: policy, store: store, base: base, merge: merge, at: date) {
                return HeldAnswer(prepared: merged, source: .fallback)
            }
            guard policy.checksSignatures else { return stored() }
            return .defaults(base, problem: .fallbackWarning(
                reason: "no flag rules are held to evaluate this merged identity's members on the device: bundled and code defaults are served"))
        }
        guard policy.checksSignatures else { return stored() }
        // The stored merge is signed by no one: rebuild it from the members' checked snapshots.
        var snapshots: [(context: EvaluationContext, snapshot: FlagSnapshot)] = []
        var tampered: [HeldAnswer.Tampered] = []
        for member in members {
            guard let stored = store.lastKnownGood(for: member) else { continue }
            if let problem = policy.storedSignatureProblem(stored.snapshot, for: member) {
                tampered.append(.snapshot(of: member, member: true, problem: problem))
            } else {
                snapshots.append((member, stored.snapshot))
            }
        }
        if !tampered.isEmpty { return .defaults(base, tampered: tampered) }
        guard snapshots.count == members.count else {
            return .defaults(base, problem: .fallbackWarning(reason: "not every member of this merged identity has stored values: bundled and code defaults are served"))
        }
        let merged = merge.merge(snapshots, killSwitchKey: base.killSwitchKey, identity: identity)
        return HeldAnswer(prepared: base.prepare(merged), source: .fallback)
    }

    /// `members` evaluated from held rules and merged as `identity`; nil without held rules.
    static func evaluateHeldRules(
        merging members: [EvaluationContext], as identity: EvaluationContext, policy: DevicePolicy, store: LastKnownGoodStore,
        base: ServingBase, merge: ContextMerge, at date: Date
    ) -> PreparedSnapshot? {
        guard store.holdsLocalRules, let endpoint = policy.localEvaluation, let rules = store.localRules(readBy: endpoint) else {
            return nil
        }
        let snapshots = members.map { rules.snapshot(for: $0, at: date) }
        var merged = merge.merge(Array(zip(members, snapshots)), killSwitchKey: base.killSwitchKey, identity: identity)
        merged.heldRules = rules
        return base.prepare(merged)
    }
}
