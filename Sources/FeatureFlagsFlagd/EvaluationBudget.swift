import FeatureFlags

/// The work one flag's evaluation may do: every rule node, list element and 64 bytes of
/// concatenated text costs one unit. Typical targeting spends tens; a rule that exceeds the
/// limit gives `null` (the default variant) instead of taking the device's memory or time.
final class EvaluationBudget {
    /// Units per evaluation.
    static let limit = 100_000
    private var remaining = EvaluationBudget.limit

    /// The whole budget again (one evaluator reused for the next flag).
    func reset() {
        remaining = Self.limit
        failure = nil
    }

    /// Why the evaluation failed where flagd's evaluator fails (its JsonLogic library refuses
    /// the operands: the flag's answer is `PARSE_ERROR`); nil while it has not.
    private(set) var failure: String?

    /// Spends `units`; false once the budget is exhausted.
    func spend(_ units: Int) -> Bool {
        remaining -= max(0, units)
        return remaining >= 0
    }

    /// Versions `sem_ver` parsed during this evaluation, by their text (the context's version
    /// is compared by many flags, each rule's by every context): parsing is most of what a
    /// `sem_ver` costs. Bounded: a hostile document cannot grow it past 256 entries.
    private var versions: [String: SemanticVersion?] = [:]

    /// The version `text` spells (nil: not a version), parsed once per evaluation.
    func version(_ text: String) -> SemanticVersion? {
        if let known = versions[text] { return known }
        let parsed = SemanticVersion(text)
        if versions.count < 256 { versions[text] = parsed }
        return parsed
    }

    /// Fails the evaluation with `reason` (the first reason is kept) and ends it: every later
    /// spend is refused, so the rule unwinds to `null` at once.
    func fail(_ reason: String) -> FlagValue {
        if failure == nil { failure = reason }
        remaining = -1
        return .null
    }
}
