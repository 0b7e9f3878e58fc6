public import Foundation

extension FlagdDefinitions {
    /// Every flag evaluated for `context` at `date` — what a service evaluating remotely would
    /// have answered. Reasons as flagd gives them: `STATIC` (no targeting), `TARGETING_MATCH`
    /// (the rule named a variant — a `fractional` split too), `DEFAULT` (the rule gave `null`,
    /// or no default variant: the value is the code default), `DISABLED` (no value: the code
    /// default), `ERROR` with `PARSE_ERROR` (the flag broke the format) or `GENERAL` (the rule
    /// named no variant of the flag, or gave a number, list or object).
    public func evaluate(for context: EvaluationContext, at date: Date = Date()) -> [String: FlagEntry] {
        var out: [String: FlagEntry] = [:]
        out.reserveCapacity(flags.count)
        forEachEvaluated(for: context, at: date) { key, entry in out[key] = entry }
        return out
    }

    /// ``evaluate(for:at:)`` straight into the table reads look flags up in: what an identify
    /// with held rules serves, with no dictionary built on the way (the snapshot builds one
    /// only if something asks for it, such as the write to the fallback file, off the reader's
    /// path).
    package func evaluatedTable(for context: EvaluationContext, at date: Date) -> FlagTable {
        FlagTable(capacity: flags.count) { (add) throws(Never) in
            forEachEvaluated(for: context, at: date) { key, entry in
                add(key, FlagNameHash.of(key), entry.value, FlagExtras.of(entry), true)
            }
        }
    }

    /// Evaluates every flag for `context` at `date`, handing each key and entry to `body`.
    private func forEachEvaluated(for context: EvaluationContext, at date: Date, _ body: (String, FlagEntry) -> Void) {
        let values = context.flagValue.objectValue ?? [:]
        let timestamp = Int(date.timeIntervalSince1970.rounded(.down))
        let budget = EvaluationBudget()
        for (key, flag) in flags {
            if let constant = flag.constant {
                body(key, constant)
            } else {
                budget.reset()
                body(key, evaluate(flag, key: key, context: values, timestamp: timestamp, budget: budget))
            }
        }
    }

    /// One flag evaluated for `context` at `date`; nil when the document has no such flag
    /// (`FLAG_NOT_FOUND`).
    public func evaluate(flag key: String, for context: EvaluationContext, at date: Date = Date()) -> FlagEntry? {
        guard let flag = flags[key] else { return nil }
        if let constant = flag.constant { return constant }
        let values = context.flagValue.objectValue ?? [:]
        return evaluate(flag, key: key, context: values, timestamp: Int(date.timeIntervalSince1970.rounded(.down)), budget: EvaluationBudget())
    }

    /// Runs a targeted flag's rule and maps its result to a variant.
    private func evaluate(_ flag: Flag, key: String, context: [String: FlagValue], timestamp: Int, budget: EvaluationBudget) -> FlagEntry {
        guard case .valid(_, let variants, let defaultVariant, let targeting?) = flag.outcome else {
            return flag.constant ?? FlagEntry(value: nil, reason: .error, errorCode: .general, metadata: flag.metadata)
        }
        let scope = LogicScope(context: context, flagKey: key, timestamp: timestamp, bucketing: bucketing, budget: budget)
        let result = scope.evaluate(targeting)
        if let failure = budget.failure { return Self.failure(.parseError, failure, metadata: flag.metadata) }
        let chosen: String
        switch result {
        case .null: return Self.resolved(defaultVariant, variants: variants, reason: .default, metadata: flag.metadata)
        case .string(let name): chosen = name
        case .bool(let b): chosen = b ? "true" : "false"
        default:
            return Self.failure(.general, "the targeting gave \(result.typeNameWithArticle), not a variant name", metadata: flag.metadata)
        }
        return Self.resolved(chosen, variants: variants, reason: .targetingMatch, metadata: flag.metadata)
    }
}
