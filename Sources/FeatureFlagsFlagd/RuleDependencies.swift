import FeatureFlags

/// What a compiled rule reads of the context: the top-level attribute names (`targetingKey`
/// included) whose values decide its result — or nil when that cannot be known from the rule
/// alone (a `var` whose path is computed, `{"var": ""}` for the whole context, `missing`,
/// `missing_some`, `$flagd.timestamp`). Two contexts that agree on every name a flag's rule
/// reads get the same answer from it, so an identify may keep the previous context's answer
/// for that flag instead of evaluating it again.
///
/// Over-approximation is safe (a name read only inside `map`/`filter`/… refers to a list
/// element, not the context, and merely makes a reuse less likely); missing a name would not
/// be, so every operator that reads the context implicitly is listed here: `fractional`
/// (the targeting key, for its default bucketing value).
enum RuleDependencies {
    /// The names `rule` reads, or nil when unknown.
    static func of(_ rule: LogicRule) -> Set<String>? {
        var names = Set<String>()
        return collect(rule, into: &names) ? names : nil
    }

    /// Adds what `rule` reads to `names`; false when it is unknown.
    private static func collect(_ rule: LogicRule, into names: inout Set<String>) -> Bool {
        switch rule {
        case .value:
            return true
        case .list(let rules):
            return rules.allSatisfy { collect($0, into: &names) }
        case .variable(let path, let fallback):
            guard let head = path.first else { return false }
            if head == "$flagd" {
                // The flag's key is fixed per flag; the evaluation time is not.
                guard path.count >= 2, path[1] == "flagKey" else { return false }
            } else {
                names.insert(head)
            }
            return fallback.map { collect($0, into: &names) } ?? true
        case .operation(let op, let arguments):
            switch op {
            case .variable, .missing, .missingSome: return false
            case .fractional: names.insert("targetingKey")
            default: break
            }
            return arguments.allSatisfy { collect($0, into: &names) }
        case .spread(let op, let rule):
            return collect(.operation(op, [rule]), into: &names)
        }
    }
}
