/// What a rule is evaluated against: one context's values, the flag being evaluated and the
/// time, as flagd injects them (`$flagd.flagKey`, `$flagd.timestamp`; `targetingKey` is the
/// context's). A `$flagd` the context itself carries is shadowed.
struct LogicScope {
    /// The context's flat form: its attributes and `targetingKey`.
    let context: [String: FlagValue]
    /// The flag being evaluated.
    let flagKey: String
    /// Unix time, in whole seconds.
    let timestamp: Int
    /// How `fractional` maps a hash to a bucket.
    let bucketing: FractionalBucketing
    /// What one evaluation may spend: rules come from a server, and a hostile one
    /// (`reduce` doubling a list forty times) must not exhaust the device.
    let budget: EvaluationBudget

    /// The data a rule looks at: the whole scope, or (inside `map`, `filter`, `reduce`, `all`,
    /// `some`, `none`) one element.
    enum Data {
        case root
        case value(FlagValue)
    }

    /// Evaluates `rule`. Never throws: anything a rule cannot do yields `null` or `false`, as
    /// JsonLogic's operators do.
    func evaluate(_ rule: LogicRule, data: Data = .root) -> FlagValue {
        guard budget.spend(1) else { return .null }
        switch rule {
        case .value(let value): return value
        case .list(let rules): return .list(rules.map { evaluate($0, data: data) })
        case .variable(let path, let fallback):
            if let found = lookup(path, in: data), found != .null { return found }
            return fallback.map { evaluate($0, data: data) } ?? .null
        case .operation(let op, let arguments): return apply(op, arguments, data: data)
        }
    }

    /// The value at `path` (nil when absent); an empty path is the whole data.
    func lookup(_ path: [String], in data: Data) -> FlagValue? {
        var current: FlagValue
        var rest = path[...]
        switch data {
        case .value(let value):
            current = value
        case .root:
            guard let head = rest.popFirst() else { return .object(wholeRoot) }
            if head == "$flagd" {
                current = .object(["flagKey": .string(flagKey), "timestamp": .int(timestamp)])
            } else {
                guard let value = context[head] else { return nil }
                current = value
            }
        }
        for component in rest {
            switch current {
            case .object(let members):
                guard let value = members[component] else { return nil }
                current = value
            case .list(let items):
                guard let index = Int(component), items.indices.contains(index) else { return nil }
                current = items[index]
            default:
                return nil
            }
        }
        return current
    }

    /// The root as one object (for `{"var": ""}`).
    private var wholeRoot: [String: FlagValue] {
        var all = context
        all["$flagd"] = .object(["flagKey": .string(flagKey), "timestamp": .int(timestamp)])
        return all
    }

    // swiftlint:disable:next cyclomatic_complexity function_body_length
    private func apply(_ op: LogicOperator, _ arguments: [LogicRule], data: Data) -> FlagValue {
        func argument(_ index: Int) -> FlagValue { index < arguments.count ? evaluate(arguments[index], data: data) : .null }
        func all() -> [FlagValue] { arguments.map { evaluate($0, data: data) } }
        switch op {
        case .variable:
            let path: [String]
            switch argument(0) {
            case .string(let text): path = text.isEmpty ? [] : text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            case .int(let index): path = [String(index)]
            case .double(let number): path = [LogicCoercion.text(of: number)]
            default: path = []
            }
            if let found = lookup(path, in: data), found != .null { return found }
            return argument(1)
        case .missing:
            return .list(missing(all(), data: data))
        case .missingSome:
            let need = LogicCoercion.number(argument(0))
            guard case .list(let keys) = argument(1) else { return .list([]) }
            let absent = missing(keys, data: data)
            return Double(keys.count - absent.count) >= need ? .list([]) : .list(absent)
        case .ifThen, .ternary:
            var index = 0
            while index + 1 < arguments.count {
                if LogicCoercion.truthy(evaluate(arguments[index], data: data)) { return evaluate(arguments[index + 1], data: data) }
                index += 2
            }
            return index < arguments.count ? evaluate(arguments[index], data: data) : .null
        case .equal: return .bool(LogicCoercion.looselyEqual(argument(0), argument(1)))
        case .notEqual: return .bool(!LogicCoercion.looselyEqual(argument(0), argument(1)))
        case .strictEqual: return .bool(LogicCoercion.strictlyEqual(argument(0), argument(1)))
        case .strictNotEqual: return .bool(!LogicCoercion.strictlyEqual(argument(0), argument(1)))
        case .not: return .bool(!LogicCoercion.truthy(argument(0)))
        case .truthy: return .bool(LogicCoercion.truthy(argument(0)))
        case .or:
            var last = FlagValue.null
            for rule in arguments {
                last = evaluate(rule, data: data)
                if LogicCoercion.truthy(last) { return last }
            }
            return last
        case .and:
            var last = FlagValue.null
            for rule in arguments {
                last = evaluate(rule, data: data)
                if !LogicCoercion.truthy(last) { return last }
            }
            return last
        case .less, .lessOrEqual:
            let values = all()
            guard values.count >= 2 else { return .bool(false) }
            let strict = op == .less
            func holds(_ a: FlagValue, _ b: FlagValue) -> Bool {
                guard let order = LogicCoercion.order(a, b) else { return false }
                return strict ? order < 0 : order <= 0
            }
            // Three arguments: "between" (exclusive for `<`, inclusive for `<=`).
            if values.count >= 3 { return .bool(holds(values[0], values[1]) && holds(values[1], values[2])) }
            return .bool(holds(values[0], values[1]))
        case .greater, .greaterOrEqual:
            guard let order = LogicCoercion.order(argument(0), argument(1)) else { return .bool(false) }
            return .bool(op == .greater ? order > 0 : order >= 0)
        case .max, .min:
            let numbers = all().map(LogicCoercion.number)
            guard !numbers.isEmpty, !numbers.contains(where: \.isNaN) else { return .null }
            return LogicCoercion.value(of: op == .max ? numbers.max()! : numbers.min()!)
        case .plus:
            return LogicCoercion.value(of: all().reduce(0) { $0 + LogicCoercion.number($1) })
        case .times:
            let values = all()
            guard !values.isEmpty else { return .null }
            return LogicCoercion.value(of: values.reduce(1) { $0 * LogicCoercion.number($1) })
        case .minus:
            let values = all()
            switch values.count {
            case 0: return .null
            case 1: return LogicCoercion.value(of: -LogicCoercion.number(values[0]))
            default: return LogicCoercion.value(of: LogicCoercion.number(values[0]) - LogicCoercion.number(values[1]))
            }
        case .divide:
            let divisor = LogicCoercion.number(argument(1))
            guard divisor != 0 else { return .null }
            return LogicCoercion.value(of: LogicCoercion.number(argument(0)) / divisor)
        case .modulo:
            let divisor = LogicCoercion.number(argument(1))
            guard divisor != 0 else { return .null }
            return LogicCoercion.value(of: LogicCoercion.number(argument(0)).truncatingRemainder(dividingBy: divisor))
        case .contains:
            let needle = argument(0)
            switch argument(1) {
            case .string(let haystack): return .bool(haystack.contains(LogicCoercion.text(needle)))
            case .list(let items): return .bool(items.contains { LogicCoercion.strictlyEqual($0, needle) })
            default: return .bool(false)
            }
        case .concatenate:
            let text = all().map(LogicCoercion.text).joined()
            return budget.spend(text.utf8.count / 64) ? .string(text) : .null
        case .substring:
            return .string(substring(LogicCoercion.text(argument(0)), argument(1), arguments.count > 2 ? argument(2) : nil))
        case .merge:
            var merged: [FlagValue] = []
            for value in all() {
                if case .list(let items) = value { merged.append(contentsOf: items) } else { merged.append(value) }
            }
            return budget.spend(merged.count) ? .list(merged) : .null
        case .map, .filter, .all, .some, .none:
            guard case .list(let items) = argument(0) else { return op == .map || op == .filter ? .list([]) : .bool(op == .none) }
            guard budget.spend(items.count) else { return .null }
            let body = arguments.count > 1 ? arguments[1] : .value(.null)
            switch op {
            case .map: return .list(items.map { evaluate(body, data: .value($0)) })
            case .filter: return .list(items.filter { LogicCoercion.truthy(evaluate(body, data: .value($0))) })
            case .all: return .bool(!items.isEmpty && items.allSatisfy { LogicCoercion.truthy(evaluate(body, data: .value($0))) })
            case .some: return .bool(items.contains { LogicCoercion.truthy(evaluate(body, data: .value($0))) })
            default: return .bool(!items.contains { LogicCoercion.truthy(evaluate(body, data: .value($0))) })
            }
        case .reduce:
            let initial = argument(2)
            guard case .list(let items) = argument(0), arguments.count > 1, budget.spend(items.count) else { return initial }
            return items.reduce(initial) { accumulator, current in
                evaluate(arguments[1], data: .value(.object(["current": current, "accumulator": accumulator])))
            }
        case .fractional:
            return FlagdOperators.fractional(all(), scope: self)
        case .semanticVersion:
            return FlagdOperators.semanticVersion(all())
        case .startsWith, .endsWith:
            return FlagdOperators.affix(all(), prefix: op == .startsWith)
        }
    }

    /// The keys among `keys` (or the list that is its first element) whose value is absent,
    /// `null` or `""`.
    private func missing(_ keys: [FlagValue], data: Data) -> [FlagValue] {
        var names = keys
        if case .list(let inner)? = keys.first { names = inner }
        return names.filter { key in
            let text = LogicCoercion.text(key)
            let path = text.isEmpty ? [] : text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            let found = lookup(path, in: data)
            return found == nil || found == .null || found == .string("")
        }
    }

    /// JavaScript's `substr`: a negative start counts from the end; a negative length stops
    /// that many characters before the end.
    private func substring(_ text: String, _ start: FlagValue, _ length: FlagValue?) -> String {
        let characters = Array(text.unicodeScalars)
        let count = characters.count
        let startNumber = LogicCoercion.number(start)
        var from = startNumber.isNaN ? 0 : Int(max(-Double(count), min(Double(count), startNumber.rounded(.towardZero))))
        if from < 0 { from += count }
        var to = count
        if let length {
            let lengthNumber = LogicCoercion.number(length)
            let l = lengthNumber.isNaN ? 0 : Int(max(-Double(count), min(Double(count), lengthNumber.rounded(.towardZero))))
            to = l < 0 ? count + l : min(count, from + l)
        }
        guard from < to else { return "" }
        var out = String.UnicodeScalarView()
        out.append(contentsOf: characters[from..<to])
        return String(out)
    }
}

/// The work one flag's evaluation may do: every rule node, list element and 64 bytes of
/// concatenated text costs one unit. Typical targeting spends tens; a rule that exceeds the
/// limit gives `null` (the default variant) instead of taking the device's memory or time.
final class EvaluationBudget {
    /// Units per evaluation.
    static let limit = 100_000
    private var remaining = EvaluationBudget.limit

    /// The whole budget again (one evaluator reused for the next flag).
    func reset() { remaining = Self.limit }

    /// Spends `units`; false once the budget is exhausted.
    func spend(_ units: Int) -> Bool {
        remaining -= max(0, units)
        return remaining >= 0
    }
}
