import FeatureFlags

/// A JsonLogic expression compiled once, when flag definitions are parsed: operators resolved
/// to cases, `var` paths split, shared evaluators (`$ref`) inlined. Evaluating it never parses
/// and never throws.
indirect enum LogicRule: Sendable, Equatable {
    /// A literal: a scalar, or an object that is data rather than an operation.
    case value(FlagValue)
    /// An array whose elements are rules.
    case list([LogicRule])
    /// `var` with a literal path (split on dots), and a default rule.
    case variable(path: [String], fallback: LogicRule?)
    /// An operation and its argument rules.
    case operation(LogicOperator, [LogicRule])
    /// An operation whose argument is one rule rather than a list (`{"max": {"var": "scores"}}`):
    /// the rule's value, when it is a list, is the argument list; any other value is the one
    /// argument when the operator takes one alone (``LogicOperator/takesAlone(_:)``). Operators
    /// that need their arguments unevaluated (``LogicOperator/takesRules``) fail here instead,
    /// as others do on a value they cannot take alone.
    case spread(LogicOperator, LogicRule)
}

/// The operators a rule can use: JsonLogic's, those flagd's evaluator library adds (`abs`,
/// `contains_all`, `contains_any`, `contains_none`) and flagd's own.
enum LogicOperator: String, Sendable, CaseIterable {
    case variable = "var", missing, missingSome = "missing_some"
    case ifThen = "if", ternary = "?:"
    case equal = "==", strictEqual = "===", notEqual = "!=", strictNotEqual = "!=="
    case not = "!", truthy = "!!", or, and
    case less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
    case max, min, plus = "+", minus = "-", times = "*", divide = "/", modulo = "%", absolute = "abs"
    case contains = "in", concatenate = "cat", substring = "substr", merge
    case map, filter, reduce, all, some, none
    case containsAll = "contains_all", containsAny = "contains_any", containsNone = "contains_none"
    case fractional, semanticVersion = "sem_ver", startsWith = "starts_with", endsWith = "ends_with"

    /// Whether the operator evaluates its arguments itself, lazily or per list element (`if`,
    /// `and`, `or`, `map`, …): it needs a literal list of rules, and flagd's evaluator fails
    /// when it is given anything else (`{"if": "a"}`, `{"and": {"var": "x"}}`).
    var takesRules: Bool {
        switch self {
        case .ifThen, .ternary, .and, .or, .map, .filter, .reduce, .all, .some, .none: return true
        default: return false
        }
    }

    /// Whether `value`, given alone instead of a list, is the operator's one argument. flagd's
    /// evaluator fails for the operators that index their arguments (`{"<": 1}`, `{"-": 2}`,
    /// `{"max": 1}`), for `cat` and `missing` of anything but text and for `merge` of `null`,
    /// a list or an object; the others take it.
    func takesAlone(_ value: FlagValue) -> Bool {
        if takesRules { return false }
        switch self {
        case .minus, .times, .divide, .modulo, .max, .min, .equal, .notEqual, .less, .lessOrEqual, .greater,
            .greaterOrEqual, .contains, .substring, .missingSome:
            return false
        case .concatenate, .missing:
            if case .string = value { return true }
            return false
        case .merge:
            switch value {
            case .string, .int, .double, .bool: return true
            default: return false
            }
        default:
            return true
        }
    }
}

/// Why a rule could not be compiled, with where it is (a JSON path under the rule).
struct LogicCompileError: Error, Sendable, Equatable {
    let path: String
    let message: String
}

/// Compiles rules, resolving `{"$ref": name}` against shared evaluators. One compiler serves a
/// whole document: each evaluator is compiled once and shared by every rule that refers to it.
///
/// A rule's size counts each reference at the size of what it stands for. References that
/// each name the next twice double the size per level: a rules file of 1 KB could stand for
/// 2³² operations, and expanding it took seconds per level. A rule larger than one evaluation
/// may spend (``maxOperations``, the evaluation budget) is refused when it is compiled.
struct LogicCompiler {
    /// The shared evaluators (`$evaluators`) by name, uncompiled.
    let evaluators: [String: FlagValue]
    /// Evaluators being expanded, to refuse a cycle.
    private var expanding: [String] = []
    /// How deep references may nest.
    static let maxReferenceDepth = 32
    /// The most operations a compiled rule may stand for (references expanded).
    static let maxOperations = EvaluationBudget.limit
    /// Operations in the rule (or evaluator) being compiled.
    private var operations = 0
    /// The most references ``expanding`` held at once while compiling the current evaluator.
    private var deepest = 0
    /// An evaluator compiled: its rule, the operations it stands for, and how many references
    /// deep it nests (itself included), so that a later use is judged as expanding it would be.
    private struct Compiled {
        let rule: LogicRule
        let operations: Int
        let height: Int
    }
    /// Evaluators compiled so far, or nil for one that stands for more than ``maxOperations``
    /// on its own.
    private var compiled: [String: Compiled?] = [:]

    init(evaluators: [String: FlagValue]) { self.evaluators = evaluators }

    /// Compiles `json` found at `path`: one rule.
    mutating func compile(_ json: FlagValue, at path: String) throws(LogicCompileError) -> LogicRule {
        operations = 0
        return try node(json, at: path)
    }

    /// Counts `count` more operations at `path`; throws past the limit.
    private mutating func count(_ count: Int, at path: String) throws(LogicCompileError) {
        operations += count
        guard operations <= Self.maxOperations else {
            throw LogicCompileError(path: path, message: "the rule stands for more than \(Self.maxOperations) operations (references expanded)")
        }
    }

    private mutating func node(_ json: FlagValue, at path: String) throws(LogicCompileError) -> LogicRule {
        try count(1, at: path)
        switch json {
        case .list(let items):
            var rules: [LogicRule] = []
            rules.reserveCapacity(items.count)
            for (index, item) in items.enumerated() { rules.append(try node(item, at: "\(path)[\(index)]")) }
            return rules.allSatisfy(\.isLiteral) ? .value(.list(rules.map(\.literal))) : .list(rules)
        case .object(let members):
            // As in JsonLogic, only an object with exactly one key is an operation; others are data.
            guard members.count == 1, let (key, argument) = members.first else { return .value(json) }
            if key == "$ref" { return try reference(argument, at: path) }
            guard let op = LogicOperator(rawValue: key) else {
                throw LogicCompileError(path: path, message: "unknown operator \"\(key)\"")
            }
            let argumentPath = "\(path).\(key)"
            var rules: [LogicRule] = []
            switch argument {
            case .list(let items):
                rules.reserveCapacity(items.count)
                for (index, item) in items.enumerated() { rules.append(try node(item, at: "\(argumentPath)[\(index)]")) }
            case .object(let inner) where inner.count == 1:
                // One rule as the whole argument list. A reference to a list is that list, as
                // if written in place (flagd substitutes `$ref` in the text before evaluating).
                let rule = try node(argument, at: argumentPath)
                switch (inner.keys.first == "$ref", rule) {
                case (true, .list(let items)): rules = items
                case (true, .value(.list(let items))): rules = items.map(LogicRule.value)
                default: return .spread(op, rule)
                }
            default:
                // One value as the one argument (JsonLogic); operators that need a list fail
                // on it when evaluated, as flagd's evaluator does.
                let rule = try node(argument, at: argumentPath)
                if !op.takesAlone(argument) { return .spread(op, rule) }
                rules = [rule]
            }
            if op == .variable, rules.count <= 2, let literal = Self.literalPath(rules) {
                return .variable(path: literal, fallback: rules.count == 2 ? rules[1] : nil)
            }
            return .operation(op, rules)
        default:
            return .value(json)
        }
    }

    /// `{"$ref": name}`: the shared evaluator, compiled once, in place.
    private mutating func reference(_ argument: FlagValue, at path: String) throws(LogicCompileError) -> LogicRule {
        guard case .string(let name) = argument else {
            throw LogicCompileError(path: "\(path).$ref", message: "a reference names an evaluator with a string")
        }
        guard let target = LogicCoercion.member(name, of: evaluators) else {
            throw LogicCompileError(path: "\(path).$ref", message: "no evaluator named \"\(name)\" in $evaluators")
        }
        if expanding.contains(name) {
            throw LogicCompileError(path: "\(path).$ref", message: "evaluator \"\(name)\" refers to itself (\((expanding + [name]).joined(separator: " → ")))")
        }
        guard expanding.count < Self.maxReferenceDepth else {
            throw LogicCompileError(path: "\(path).$ref", message: "evaluator references nest deeper than \(Self.maxReferenceDepth)")
        }
        switch compiled[name] {
        case .some(.some(let done)):
            guard expanding.count + done.height <= Self.maxReferenceDepth else {
                throw LogicCompileError(path: "\(path).$ref", message: "evaluator references nest deeper than \(Self.maxReferenceDepth)")
            }
            deepest = max(deepest, expanding.count + done.height)
            try count(done.operations, at: "\(path).$ref")
            return done.rule
        case .some(.none):
            throw LogicCompileError(path: "\(path).$ref", message: "evaluator \"\(name)\" stands for more than \(Self.maxOperations) operations (references expanded)")
        case .none:
            break
        }
        // Counted on its own, so that what it stands for is its own and can be kept.
        let (outer, outerDeepest, base) = (operations, deepest, expanding.count)
        operations = 0
        expanding.append(name)
        deepest = expanding.count
        defer {
            expanding.removeLast()
            deepest = max(outerDeepest, deepest)
        }
        let rule: LogicRule
        do throws(LogicCompileError) {
            rule = try node(target, at: "$evaluators.\(name)")
        } catch {
            if operations > Self.maxOperations { compiled[name] = .some(nil) }
            operations = outer
            throw error
        }
        compiled[name] = Compiled(rule: rule, operations: operations, height: deepest - base)
        let own = operations
        operations = outer
        try count(own, at: "\(path).$ref")
        return rule
    }

    /// The split path of a `var` whose first argument is a literal string or number.
    private static func literalPath(_ rules: [LogicRule]) -> [String]? {
        guard let first = rules.first else { return [] }
        switch first {
        case .value(.string(let text)): return LogicScope.path(text)
        case .value(.int(let index)): return [String(index)]
        case .value(.null): return []
        default: return nil
        }
    }
}

extension LogicRule {
    /// Whether the rule is a constant.
    var isLiteral: Bool { if case .value = self { return true } else { return false } }
    /// The constant (for a literal rule).
    var literal: FlagValue { if case .value(let value) = self { return value } else { return .null } }
    /// Whether flagd's evaluator can apply the rule to each element (`all`, `some`, `none`,
    /// `reduce`): an operation, or an object of data — not a plain value or a list.
    var appliesToElements: Bool {
        switch self {
        case .value(.object), .variable, .operation, .spread: return true
        case .value, .list: return false
        }
    }
}
