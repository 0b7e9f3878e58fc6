package import Foundation
package import FeatureFlags

extension FlagdDefinitions {
    /// Every flag evaluated for `context` at `date` — what a service evaluating remotely would
    /// have answered. Reasons as flagd gives them: `STATIC` (no targeting), `TARGETING_MATCH`
    /// (the rule named a variant — a `fractional` split too), `DEFAULT` (the rule gave `null`,
    /// or no default variant: the value is the code default), `DISABLED` (no value: the code
    /// default), `ERROR` with `PARSE_ERROR` (the flag broke the format) or `GENERAL` (the rule
    /// named no variant of the flag, or gave a number, list or object).
    package func evaluate(for context: EvaluationContext, at date: Date = Date()) -> [String: FlagEntry] {
        evaluatedTable(for: context, at: date).dictionary()
    }

    /// ``evaluate(for:at:)`` straight into the table reads look flags up in: what an identify
    /// with held rules serves, with no dictionary built on the way (the snapshot builds one
    /// only if something asks for it, such as the write to the fallback file, off the reader's
    /// path). Names are hashed and answers built when the rules are compiled, not here.
    ///
    /// With `previous` — the table these same definitions gave for another context — a flag
    /// whose targeting reads only attributes on which the two contexts agree keeps its
    /// previous answer instead of being evaluated again (``RuleDependencies``).
    package func evaluatedTable(
        for context: EvaluationContext, at date: Date, reusing previous: (table: FlagTable, context: EvaluationContext)? = nil
    ) -> FlagTable {
        let order = self.order
        // The attributes on which the two contexts differ, as bits; the previous table was
        // filled in `order` too (the same definitions made it), so flag `i` is its slot `i`.
        var changed = UInt64.max
        var before: FlagTable?
        if let previous, previous.table.count == order.keys.count {
            let old = previous.context.flagValue.objectValue ?? [:]
            let new = context.flagValue.objectValue ?? [:]
            changed = 0
            // Unchanged means the same bytes: a rule compares text by its bytes, so a value
            // respelled in another Unicode normal form may answer otherwise.
            for (bit, name) in order.attributes.enumerated() where !LogicCoercion.identical(old[name], new[name]) {
                changed |= 1 << UInt64(bit)
            }
            before = previous.table
        }
        return FlagTable(capacity: order.keys.count) { (add) throws(Never) in
            var scope = scope(for: context, at: date)
            for position in 0..<order.keys.count {
                let key = order.keys[position]
                let flag = order.flags[position]
                if let constant = flag.constant {
                    add(key, flag.hash, constant.entry.value, constant.extras, true)
                    continue
                }
                if let before, let mask = order.masks[position], mask & changed == 0 {
                    let slot = before.slot(at: position)
                    if slot.pointee.name == key {
                        add(key, flag.hash, slot.pointee.value, slot.pointee.extras, true)
                        continue
                    }
                }
                scope.budget.reset()
                scope.flagKey = key
                let answer = evaluate(flag, in: scope)
                add(key, flag.hash, answer.entry.value, answer.extras, true)
            }
        }
    }

    /// One flag evaluated for `context` at `date`; nil when the document has no such flag
    /// (`FLAG_NOT_FOUND`).
    package func evaluate(flag key: String, for context: EvaluationContext, at date: Date = Date()) -> FlagEntry? {
        guard let flag = flags[key] else { return nil }
        if let constant = flag.constant { return constant.entry }
        var scope = scope(for: context, at: date)
        scope.flagKey = key
        return evaluate(flag, in: scope).entry
    }

    /// What a rule sees when evaluated for `context` at `date`, before a flag's key is set.
    private func scope(for context: EvaluationContext, at date: Date) -> LogicScope {
        LogicScope(
            context: context.flagValue.objectValue ?? [:], flagKey: "", timestamp: Int(date.timeIntervalSince1970.rounded(.down)),
            bucketing: bucketing, budget: EvaluationBudget())
    }

    /// Runs a targeted flag's rule and maps its result to one of the flag's answers (an error
    /// is made here, with its details).
    private func evaluate(_ flag: Flag, in scope: LogicScope) -> Answer {
        guard case .valid(_, _, _, let targeting?) = flag.outcome, let fallback = flag.fallback else {
            return flag.constant ?? Answer(FlagEntry(value: nil, reason: .error, errorCode: .general, metadata: flag.metadata))
        }
        let result = scope.evaluate(targeting)
        if let failure = scope.budget.failure { return Answer(Self.failure(.parseError, failure, metadata: flag.metadata)) }
        let chosen: String
        switch result {
        case .null: return fallback
        case .string(let name): chosen = name
        case .bool(let b): chosen = b ? "true" : "false"
        default:
            return Answer(Self.failure(.general, "the targeting gave \(result.typeNameWithArticle), not a variant name", metadata: flag.metadata))
        }
        // By the name's bytes, as flagd finds it (``LogicCoercion/member(_:of:)``).
        if let match = LogicCoercion.member(chosen, of: flag.matches) { return match }
        // The name is not shown: a rule may return a context value (`{"var": "email"}`).
        return Answer(Self.failure(.general, "the targeting named a variant this flag does not define", metadata: flag.metadata))
    }
}
