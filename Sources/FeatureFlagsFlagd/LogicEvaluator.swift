import FeatureFlags

/// What a rule is evaluated against: one context's values, the flag being evaluated and the
/// time, as flagd injects them (`$flagd.flagKey`, `$flagd.timestamp`; `targetingKey` is the
/// context's). A `$flagd` the context itself carries is shadowed.
struct LogicScope {
    /// The context's flat form: its attributes and `targetingKey`.
    let context: [String: FlagValue]
    /// The flag being evaluated (one scope serves every flag of an identify: set per flag).
    var flagKey: String
    /// Unix time, in whole seconds.
    let timestamp: Int
    /// How `fractional` maps a hash to a bucket.
    let bucketing: FractionalBucketing
    /// What one evaluation may spend: rules come from a server, and a hostile one
    /// (`reduce` doubling a text forty times) must not exhaust the device.
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
            // The default is evaluated even when unused, as every argument is (see `apply`).
            let otherwise = fallback.map { evaluate($0, data: data) } ?? .null
            if let found = lookup(path, in: data), found != .null { return found }
            return otherwise
        case .operation(let op, let arguments): return apply(op, arguments, data: data)
        case .spread(let op, let rule):
            guard !op.takesRules else { return budget.fail("`\(op.rawValue)` needs a list of arguments") }
            let value = evaluate(rule, data: data)
            guard case .list(let items) = value else {
                guard op.takesAlone(value) else { return budget.fail("`\(op.rawValue)` needs a list of arguments, not \(value.typeNameWithArticle)") }
                return apply(op, [.value(value)], data: data)
            }
            guard budget.spend(items.count) else { return .null }
            return apply(op, items.map(LogicRule.value), data: data)
        }
    }

    /// A `var` or `missing` path split on dots. Empty parts are skipped, as flagd's evaluator
    /// skips them (`"user..name"` is `user.name`, `""` and `"."` the whole data).
    static func path(_ text: String) -> [String] {
        text.split(separator: ".").map(String.init)
    }

    /// The path a `var` or `missing` name stands for: text split on dots, a number in its
    /// plain digits (`1.5` is `1` then `5`); nil for anything else.
    static func path(of name: FlagValue) -> [String]? {
        switch name {
        case .string(let text): return path(text)
        case .int(let index): return [String(index)]
        case .double(let number): return path(GoNumberText.fixed(number))
        case .bool, .null, .list, .object: return nil
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
                guard let value = LogicCoercion.member(head, of: context) else { return nil }
                current = value
            }
        }
        for component in rest {
            switch current {
            case .object(let members):
                guard let value = LogicCoercion.member(component, of: members) else { return nil }
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
        // Every argument is evaluated first, as flagd's evaluator does — so one that fails fails
        // the rule even where the operator does not use it (`{"!": [true, {"cat": [false]}]}`) —
        // except for the operators that evaluate their arguments lazily or per element.
        let evaluated = op.takesRules ? nil : arguments.map { evaluate($0, data: data) }
        func argument(_ index: Int) -> FlagValue {
            guard index < arguments.count else { return .null }
            return evaluated?[index] ?? evaluate(arguments[index], data: data)
        }
        func all() -> [FlagValue] { evaluated ?? arguments.map { evaluate($0, data: data) } }
        // Operands as flagd's evaluator converts them for arithmetic; nil (the evaluation
        // failed, as it fails there) for a Boolean, `null`, a list or an object.
        func operands(_ values: [FlagValue]) -> [Double]? {
            var numbers: [Double] = []
            numbers.reserveCapacity(values.count)
            for value in values {
                guard let number = LogicCoercion.libraryNumber(value) else {
                    _ = budget.fail("`\(op.rawValue)` cannot compute with \(value.typeNameWithArticle)")
                    return nil
                }
                numbers.append(number)
            }
            return numbers
        }
        switch op {
        case .variable:
            let name = argument(0)
            // flagd's evaluator reads a path only from text or a number; `null` is the whole data.
            guard let path = name == .null ? [] : Self.path(of: name) else {
                return budget.fail("`var` cannot read the path \(name.typeNameWithArticle)")
            }
            if let found = lookup(path, in: data), found != .null { return found }
            // A default only as the second of exactly two arguments, as in flagd's evaluator.
            return arguments.count == 2 ? argument(1) : .null
        case .missing:
            return missing(all(), data: data).map(FlagValue.list) ?? .null
        case .missingSome:
            guard let need = operands([argument(0)])?.first else { return .null }
            guard case .list(let keys) = argument(1) else { return budget.fail("`missing_some` needs a count and a list of names") }
            guard let absent = missing(keys, data: data) else { return .null }
            // The count as a whole number, as flagd's evaluator truncates it (NaN and
            // infinities ask for nothing there).
            let wanted = need.isFinite ? Int(max(-1e15, min(1e15, need.rounded(.towardZero)))) : Int.min
            return wanted > keys.count - absent.count ? .list(absent) : .list([])
        case .ifThen, .ternary:
            var index = 0
            while index + 1 < arguments.count {
                if LogicCoercion.truthy(evaluate(arguments[index], data: data)) { return evaluate(arguments[index + 1], data: data) }
                index += 2
            }
            return index < arguments.count ? evaluate(arguments[index], data: data) : .null
        case .equal, .notEqual, .strictEqual, .strictNotEqual:
            // Fewer than two arguments are never equal (flagd's evaluator); a third is ignored.
            let negated = op == .notEqual || op == .strictNotEqual
            guard arguments.count >= 2 else { return .bool(negated) }
            let (a, b) = (argument(0), argument(1))
            let equal = op == .equal || op == .notEqual ? LogicCoercion.looselyEqual(a, b) : LogicCoercion.strictlyEqual(a, b)
            return .bool(equal != negated)
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
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            // flagd's evaluator: `a > b` is `b < a`, `a >= b` is `b < a or b == a`; a third
            // argument makes it "between" (`a < b < c`, `a > b > c`, inclusive for `<=` and `>=`);
            // with a fourth or more only the first two are compared, as there.
            let values = all()
            guard values.count >= 2 else { return .bool(false) }
            let inclusive = op == .lessOrEqual || op == .greaterOrEqual
            func before(_ a: FlagValue, _ b: FlagValue) -> Bool {
                inclusive ? LogicCoercion.lessOrEqual(a, b) : LogicCoercion.less(a, b)
            }
            let ascending = op == .less || op == .lessOrEqual
            let (first, second) = ascending ? (values[0], values[1]) : (values[1], values[0])
            if values.count == 3 {
                let third = values[2]
                return .bool(ascending ? before(first, second) && before(second, third) : before(third, first) && before(first, second))
            }
            return .bool(before(first, second))
        case .max, .min:
            guard let numbers = operands(all()), !numbers.isEmpty, !numbers.contains(where: \.isNaN) else { return .null }
            return LogicCoercion.value(of: op == .max ? numbers.max()! : numbers.min()!)
        case .plus:
            guard let numbers = operands(all()) else { return .null }
            return LogicCoercion.value(of: numbers.reduce(0, +))
        case .times:
            guard let numbers = operands(all()) else { return .null }
            return LogicCoercion.value(of: numbers.reduce(1, *))
        case .minus, .divide:
            // Left to right over every argument (`8 / 2 / 2`), as flagd's evaluator and
            // JsonLogic's current tests do; one argument is negated (`-`) or itself (`/`);
            // none is 0. Division by zero gives an infinity or NaN, so `null`.
            guard let values = operands(all()) else { return .null }
            guard var result = values.first else { return .int(0) }
            if values.count == 1 { return LogicCoercion.value(of: op == .minus ? -result : result) }
            for value in values.dropFirst() { result = op == .minus ? result - value : result / value }
            return LogicCoercion.value(of: result)
        case .modulo:
            guard arguments.count >= 2 else { return budget.fail("`%` needs two arguments") }
            guard let pair = operands([argument(0), argument(1)]) else { return .null }
            guard pair[1] != 0 else { return .null }
            return LogicCoercion.value(of: pair[0].truncatingRemainder(dividingBy: pair[1]))
        case .absolute:
            guard !arguments.isEmpty, let number = LogicCoercion.libraryNumber(argument(0)) else {
                return budget.fail("`abs` needs a number or text")
            }
            return LogicCoercion.value(of: Swift.abs(number))
        case .containsAll, .containsAny, .containsNone:
            // Two lists, else false (true for `contains_none`); elements found by identity,
            // numbers by value.
            let values = all()
            guard values.count == 2, case .list(let search) = values[0], case .list(let wanted) = values[1] else {
                return .bool(op == .containsNone)
            }
            var found = 0
            for element in wanted {
                guard let present = LogicCoercion.listHolds(search, element) else {
                    return budget.fail("`\(op.rawValue)` cannot compare lists or objects")
                }
                if present {
                    found += 1
                    if op != .containsAll { break }
                } else if op == .containsAll {
                    return .bool(false)
                }
            }
            switch op {
            case .containsAll: return .bool(true)
            case .containsAny: return .bool(found > 0)
            default: return .bool(found == 0)
            }
        case .contains:
            guard !arguments.isEmpty else { return budget.fail("`in` needs something to look for") }
            let needle = argument(0)
            let haystack = argument(1)
            guard let found = LogicCoercion.contains(needle, in: haystack) else {
                return budget.fail("`in` cannot look for \(needle.typeNameWithArticle) in \(haystack.typeNameWithArticle)")
            }
            return .bool(found)
        case .concatenate:
            let values = all()
            var text = ""
            for value in values {
                guard let piece = LogicCoercion.concatenationText(value) else {
                    return budget.fail("`cat` cannot concatenate \(value.typeNameWithArticle)")
                }
                text += piece
            }
            // flagd's evaluator trims the joined text of two or more values.
            if values.count > 1 { text = LogicCoercion.trimmingSpace(text) }
            return budget.spend(text.utf8.count / 64) ? .string(text) : .null
        case .substring:
            // flagd's evaluator: text (numbers and `null` as `cat` writes them), a start, and a
            // length only as the third of exactly three arguments.
            guard arguments.count >= 2 else { return budget.fail("`substr` needs a text and a start") }
            guard let text = LogicCoercion.concatenationText(argument(0)) else {
                return budget.fail("`substr` cannot cut \(argument(0).typeNameWithArticle)")
            }
            guard let bounds = operands(arguments.count == 3 ? [argument(1), argument(2)] : [argument(1)]) else { return .null }
            return .string(substring(text, from: bounds[0], length: bounds.count > 1 ? bounds[1] : nil))
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
            // flagd's evaluator applies the body of `all`, `some` and `none` as a rule: one that
            // is a plain value (`true`, `null`, a list) fails there once there are elements.
            if op == .all || op == .some || op == .none, !items.isEmpty, !body.appliesToElements {
                return budget.fail("`\(op.rawValue)` needs a rule to apply to each element")
            }
            switch op {
            case .map: return .list(items.map { evaluate(body, data: .value($0)) })
            case .filter: return .list(items.filter { LogicCoercion.truthy(evaluate(body, data: .value($0))) })
            case .all: return .bool(!items.isEmpty && items.allSatisfy { LogicCoercion.truthy(evaluate(body, data: .value($0))) })
            case .some: return .bool(items.contains { LogicCoercion.truthy(evaluate(body, data: .value($0))) })
            default: return .bool(!items.contains { LogicCoercion.truthy(evaluate(body, data: .value($0))) })
            }
        case .reduce:
            return reduce(arguments, data: data)
        case .fractional:
            return FlagdOperators.fractional(all(), scope: self)
        case .semanticVersion:
            return FlagdOperators.semanticVersion(all(), parsed: budget)
        case .startsWith, .endsWith:
            return FlagdOperators.affix(all(), prefix: op == .startsWith)
        }
    }

    /// `reduce` as flagd's evaluator does it: without an initial value, or over no list, 0; the
    /// initial value (a Boolean, number or text, else the evaluation fails) sets the
    /// accumulator's type, and each step's result is converted to it (`truthy`, a number as
    /// arithmetic converts one, text as `cat` writes one — or the evaluation fails); `null`
    /// elements are skipped. The body sees `current`, `accumulator` and `valueType`.
    private func reduce(_ arguments: [LogicRule], data: Data) -> FlagValue {
        guard arguments.count >= 3 else { return .int(0) }
        let initial = evaluate(arguments[2], data: data)
        let valueType: String
        switch initial {
        case .bool: valueType = "bool"
        case .int, .double: valueType = "number"
        case .string: valueType = "string"
        default: return budget.fail("`reduce` starts from a Boolean, number or text, not \(initial.typeNameWithArticle)")
        }
        let items: [FlagValue]
        switch arguments[0] {
        case .value(.list(let literal)): items = literal
        case .value: return .int(0)
        default:
            switch evaluate(arguments[0], data: data) {
            case .list(let evaluated): items = evaluated
            case .null: return .int(0)
            case let other: return budget.fail("`reduce` needs a list, not \(other.typeNameWithArticle)")
            }
        }
        guard budget.spend(items.count) else { return .null }
        let body = arguments[1]
        if items.contains(where: { $0 != .null }), !body.appliesToElements {
            return budget.fail("`reduce` needs a rule to apply to each element")
        }
        var accumulator = initial
        for current in items where current != .null {
            let step = evaluate(body, data: .value(.object(["current": current, "accumulator": accumulator, "valueType": .string(valueType)])))
            // An exhausted budget gives `null`, as everywhere (not a conversion's failure).
            guard budget.spend(0) else { return .null }
            switch valueType {
            case "bool":
                accumulator = .bool(LogicCoercion.truthy(step))
            case "number":
                guard let number = LogicCoercion.libraryNumber(step) else {
                    return budget.fail("`reduce` cannot count \(step.typeNameWithArticle) as a number")
                }
                accumulator = LogicCoercion.value(of: number)
            default:
                guard let text = LogicCoercion.concatenationText(step) else {
                    return budget.fail("`reduce` cannot write \(step.typeNameWithArticle) as text")
                }
                accumulator = .string(text)
            }
        }
        return accumulator
    }

    /// The keys among `keys` that name nothing, as flagd's evaluator reads each with `var`:
    /// absent or `null` is missing (`""` is present); a key `[path, default]` with a default
    /// is never missing; a `null` key is missing from an object. nil — the evaluation failed,
    /// as it fails there — for a Boolean or object key.
    private func missing(_ keys: [FlagValue], data: Data) -> [FlagValue]? {
        var absent: [FlagValue] = []
        for key in keys {
            var name = key
            var fallback = FlagValue.null
            if case .list(let parts) = key {
                guard let first = parts.first else { continue }
                guard case .string = first else {
                    _ = budget.fail("`missing` cannot read the name \(first.typeNameWithArticle)")
                    return nil
                }
                name = first
                if parts.count == 2 { fallback = parts[1] }
            }
            let found: FlagValue?
            if let path = Self.path(of: name) {
                found = lookup(path, in: data)
            } else if name == .null {
                if case .value(let value) = data, value.listValue == nil, value.objectValue == nil { found = value } else { found = nil }
            } else {
                _ = budget.fail("`missing` cannot read the name \(name.typeNameWithArticle)")
                return nil
            }
            if found == nil || found == .null, fallback == .null { absent.append(key) }
        }
        return absent
    }

    /// JavaScript's `substr`: a negative start counts from the end; a negative length stops
    /// that many characters before the end.
    private func substring(_ text: String, from startNumber: Double, length lengthNumber: Double?) -> String {
        let characters = Array(text.unicodeScalars)
        let count = characters.count
        var from = startNumber.isNaN ? 0 : Int(max(-Double(count), min(Double(count), startNumber.rounded(.towardZero))))
        if from < 0 { from += count }
        var to = count
        if let lengthNumber {
            let l = lengthNumber.isNaN ? 0 : Int(max(-Double(count), min(Double(count), lengthNumber.rounded(.towardZero))))
            to = l < 0 ? count + l : min(count, from + l)
        }
        guard from < to else { return "" }
        var out = String.UnicodeScalarView()
        out.append(contentsOf: characters[from..<to])
        return String(out)
    }
}
