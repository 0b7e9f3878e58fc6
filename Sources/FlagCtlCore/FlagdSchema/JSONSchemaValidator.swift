import FeatureFlags
import Foundation

/// A JSON Schema (draft-07) validator for the keywords flagd's published schemas use: `$ref`,
/// `type`, `enum`, `minimum`, `minLength`, `pattern`, `items` (one schema or a list),
/// `additionalItems`, `minItems`, `maxItems`, `properties`, `patternProperties`,
/// `additionalProperties`, `required`, `minProperties`, `allOf`, `anyOf`, `oneOf`, `not`,
/// and Boolean schemas. Other keywords are ignored, as draft-07 ignores unknown ones.
///
/// Draft-07's rules are kept where they are easy to get wrong: a `$ref` hides its sibling
/// keywords; `integer` includes `25.0`; `pattern` searches (it is not anchored) and reads `.`,
/// `\d` and `$` as ECMA-262 does (``icuPattern(_:)``); `minLength` counts code points.
///
/// Every step is counted against a budget, so a hostile document cannot hold the validator:
/// `oneOf` evaluates every alternative, and alternatives nested in one another could
/// otherwise multiply the work.
struct JSONSchemaValidator {
    /// One step of a path into the instance.
    enum Step: Hashable {
        case member(String)
        case index(Int)
    }

    /// What is wrong, kept as data: messages are written only for the failures reported.
    enum Problem: Hashable {
        case notAllowed
        case type(FlagValue, expected: [String])
        case notInEnum(FlagValue, allowed: [FlagValue])
        case belowMinimum(FlagValue, minimum: FlagValue)
        case tooShort(FlagValue, least: Int)
        case pattern(FlagValue, pattern: String)
        case tooFewItems(Int, least: Int)
        case tooManyItems(Int, most: Int)
        case required
        case tooFewMembers(Int, least: Int)
        case memberNotAllowed(String)
        case severalAlternatives(Int)
        case excluded(FlagValue)
    }

    /// Where the instance breaks the schema, and how.
    struct Failure: Hashable {
        var path: [Step]
        var problem: Problem
        /// The instance is not of the type the schema wants (the alternative did not apply).
        var isTypeMismatch: Bool { if case .type = problem { true } else { false } }
    }

    /// The budget ran out before the instance was checked.
    struct BudgetExhausted: Error {}

    /// One schema, compiled: its keywords read once, references as indices.
    private struct Node {
        var constant: Bool?
        var reference: Int?
        var types: [String]?
        var enumValues: [FlagValue]?
        var minimum: FlagValue?
        var minLength: Int?
        var pattern: Int?
        var items: Int?
        var itemsList: [Int]?
        var additionalItems: Int?
        var minItems: Int?
        var maxItems: Int?
        var properties: [String: Int] = [:]
        var patternProperties: [(pattern: Int, node: Int)] = []
        var additionalProperties: Int?
        var required: [String] = []
        var minProperties: Int?
        var allOf: [Int] = []
        var anyOf: [Int] = []
        var oneOf: [Int] = []
        var not: Int?
    }

    /// What a `pattern` stands for, in words, for the messages ("a version as semver.org
    /// writes it"); a pattern not named here is quoted.
    let patternNames: [String: String]
    /// References that name nothing in the documents (a broken schema; they accept anything).
    private(set) var unresolved: [String] = []
    /// Steps left.
    private(set) var budget: Int
    private var nodes: [Node] = []
    private var patterns: [(source: String, regex: NSRegularExpression?)] = []
    private var root = 0
    /// The path to the instance being checked: one array pushed and popped, copied only into
    /// a failure.
    private var path: [Step] = []

    /// A validator for the document named `root` of `documents` (its `$ref`s name others before
    /// their `#`), allowed `budget` steps in all.
    init(documents: [String: FlagValue], root: String, patternNames: [String: String] = [:], budget: Int) {
        self.patternNames = patternNames
        self.budget = budget
        var compiler = Compiler(documents: documents)
        self.root = compiler.node(for: root + "#")
        self.nodes = compiler.nodes
        self.patterns = compiler.patterns.map { ($0, try? NSRegularExpression(pattern: Self.icuPattern($0))) }
        self.unresolved = compiler.unresolved
    }

    /// The failures of `instance` (none: it is valid).
    mutating func validate(_ instance: FlagValue) throws(BudgetExhausted) -> [Failure] {
        path = []
        return try validate(instance, root)
    }

    private mutating func fail(_ problem: Problem) -> Failure { Failure(path: path, problem: problem) }

    private mutating func validate(_ instance: FlagValue, _ index: Int) throws(BudgetExhausted) -> [Failure] {
        budget -= 1
        guard budget >= 0 else { throw BudgetExhausted() }
        let node = nodes[index]
        if let constant = node.constant { return constant ? [] : [fail(.notAllowed)] }
        // Draft-07: a `$ref` stands for the whole schema; its siblings are not read.
        if let reference = node.reference { return try validate(instance, reference) }
        if let types = node.types, !Self.matches(instance, types: types) { return [fail(.type(instance, expected: types))] }
        var failures: [Failure] = []
        if let allowed = node.enumValues, !allowed.contains(where: { Self.equal($0, instance) }) {
            failures.append(fail(.notInEnum(instance, allowed: allowed)))
        }
        switch instance {
        case .int, .double:
            if let minimum = node.minimum, let least = Self.number(minimum), let value = Self.number(instance), value < least {
                failures.append(fail(.belowMinimum(instance, minimum: minimum)))
            }
        case .string(let text):
            if let least = node.minLength, text.unicodeScalars.count < least { failures.append(fail(.tooShort(instance, least: least))) }
            if let pattern = node.pattern, !matches(text, pattern) { failures.append(fail(.pattern(instance, pattern: patterns[pattern].source))) }
        case .list(let elements):
            failures += try listKeywords(elements, node)
        case .object(let members):
            failures += try objectKeywords(members, node)
        default: break
        }
        for schema in node.allOf { failures += try validate(instance, schema) }
        if !node.anyOf.isEmpty {
            var attempts: [[Failure]] = []
            for schema in node.anyOf {
                let attempt = try validate(instance, schema)
                if attempt.isEmpty { attempts = []; break }
                attempts.append(attempt)
            }
            if let best = Self.mostRelevant(attempts, at: path.count) { failures += best }
        }
        if !node.oneOf.isEmpty {
            var attempts: [[Failure]] = []
            var passed = 0
            for schema in node.oneOf {
                let attempt = try validate(instance, schema)
                if attempt.isEmpty { passed += 1 } else { attempts.append(attempt) }
            }
            if passed > 1 {
                failures.append(fail(.severalAlternatives(passed)))
            } else if passed == 0, let best = Self.mostRelevant(attempts, at: path.count) {
                failures += best
            }
        }
        if let excluded = node.not, try validate(instance, excluded).isEmpty { failures.append(fail(.excluded(instance))) }
        return failures
    }

    private mutating func listKeywords(_ elements: [FlagValue], _ node: Node) throws(BudgetExhausted) -> [Failure] {
        var failures: [Failure] = []
        if let least = node.minItems, elements.count < least { failures.append(fail(.tooFewItems(elements.count, least: least))) }
        if let most = node.maxItems, elements.count > most { failures.append(fail(.tooManyItems(elements.count, most: most))) }
        for (index, element) in elements.enumerated() {
            let schema: Int?
            if let positional = node.itemsList {
                schema = index < positional.count ? positional[index] : node.additionalItems
            } else {
                schema = node.items
            }
            guard let schema else { continue }
            path.append(.index(index))
            defer { path.removeLast() }
            failures += try validate(element, schema)
        }
        return failures
    }

    private mutating func objectKeywords(_ members: [String: FlagValue], _ node: Node) throws(BudgetExhausted) -> [Failure] {
        var failures: [Failure] = []
        for name in node.required where members[name] == nil {
            path.append(.member(name))
            failures.append(fail(.required))
            path.removeLast()
        }
        if let least = node.minProperties, members.count < least { failures.append(fail(.tooFewMembers(members.count, least: least))) }
        guard !node.properties.isEmpty || !node.patternProperties.isEmpty || node.additionalProperties != nil else { return failures }
        for name in members.keys.sorted() {
            let value = members[name]!
            var described = false
            if let schema = node.properties[name] {
                described = true
                path.append(.member(name))
                defer { path.removeLast() }
                failures += try validate(value, schema)
            }
            for (pattern, schema) in node.patternProperties where matches(name, pattern) {
                described = true
                path.append(.member(name))
                defer { path.removeLast() }
                failures += try validate(value, schema)
            }
            guard !described, let additional = node.additionalProperties else { continue }
            if nodes[additional].constant == false {
                failures.append(fail(.memberNotAllowed(name)))
            } else {
                path.append(.member(name))
                defer { path.removeLast() }
                failures += try validate(value, additional)
            }
        }
        return failures
    }

    /// Of failed alternatives, the one meant: first one that failed only inside the instance
    /// (it recognised the instance's form: a rule object with its operator), then one that
    /// accepted the instance's type, then the one with the fewest failures, then the fewest
    /// type mismatches inside (an alternative of the instance's form got further), then the
    /// deepest, then the first written.
    static func mostRelevant(_ attempts: [[Failure]], at depth: Int) -> [Failure]? {
        func score(_ failures: [Failure]) -> [Int] {
            let inside = failures.allSatisfy { $0.path.count > depth } ? 0 : 1
            let wrongType = failures.contains { $0.isTypeMismatch && $0.path.count == depth } ? 1 : 0
            let mismatches = failures.filter(\.isTypeMismatch).count
            return [inside, wrongType, failures.count, mismatches, -(failures.map(\.path.count).max() ?? 0)]
        }
        var best: (score: [Int], failures: [Failure])?
        for attempt in attempts {
            let current = score(attempt)
            if let best, !current.lexicographicallyPrecedes(best.score) { continue }
            best = (current, attempt)
        }
        return best?.failures
    }

    /// A failure in words.
    func message(_ failure: Failure) -> String {
        switch failure.problem {
        case .notAllowed: "is not allowed here"
        case .type(let value, let expected): "is \(Self.describe(value)), expected \(Self.list(expected.map(Self.typeWithArticle), joinedBy: "or"))"
        case .notInEnum(let value, let allowed): "is \(Self.describe(value)), expected one of \(allowed.map { FlagJSON.string($0) }.joined(separator: ", "))"
        case .belowMinimum(let value, let minimum): "is \(Self.describe(value)), less than the minimum \(FlagJSON.string(minimum))"
        case .tooShort(let value, let least): "is \(Self.describe(value)), shorter than \(least) character\(least == 1 ? "" : "s")"
        case .pattern(let value, let pattern): "is \(Self.describe(value)), \(patternNames[pattern].map { "not \($0)" } ?? "which does not match \(pattern)")"
        case .tooFewItems(let count, let least): "has \(count) item\(count == 1 ? "" : "s"), at least \(least) needed"
        case .tooManyItems(let count, let most): "has \(count) items, at most \(most) allowed"
        case .required: "is required"
        case .tooFewMembers(let count, let least): "has \(count) member\(count == 1 ? "" : "s"), at least \(least) needed"
        case .memberNotAllowed(let name): "has \(FlagJSON.string(.string(name))), which is not allowed here"
        case .severalAlternatives(let count): "matches \(count) of the schema's alternatives; exactly one is allowed"
        case .excluded(let value): "is \(Self.describe(value)), a form the schema excludes"
        }
    }

    /// Whether the compiled pattern finds a match in `text`. A pattern the platform cannot
    /// compile matches nothing.
    private func matches(_ text: String, _ pattern: Int) -> Bool {
        guard let regex = patterns[pattern].regex else { return false }
        return regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }

    /// Reads schemas into nodes, each schema once: a `$ref` is looked up by its absolute name
    /// (`targeting.json#/definitions/args`), so recursive schemas compile to a cycle of indices.
    private struct Compiler {
        let documents: [String: FlagValue]
        var nodes: [Node] = []
        var patterns: [String] = []
        var unresolved: [String] = []
        private var named: [String: Int] = [:]

        init(documents: [String: FlagValue]) { self.documents = documents }

        /// The node of `document#pointer`.
        mutating func node(for absolute: String) -> Int {
            if let index = named[absolute] { return index }
            let index = nodes.count
            nodes.append(Node(constant: true))
            named[absolute] = index
            let parts = absolute.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
            let document = String(parts[0])
            guard var target = documents[document] else { unresolved.append(absolute); return index }
            for token in parts.count == 2 ? parts[1].split(separator: "/") : [] {
                let key = token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
                guard case .object(let members) = target, let next = members[key] else { unresolved.append(absolute); return index }
                target = next
            }
            nodes[index] = compile(target, in: document)
            return index
        }

        /// A subschema: a new node.
        mutating func subschema(_ schema: FlagValue, in document: String) -> Int {
            let node = compile(schema, in: document)
            nodes.append(node)
            return nodes.count - 1
        }

        mutating func compile(_ schema: FlagValue, in document: String) -> Node {
            guard case .object(let keywords) = schema else { return Node(constant: schema.boolValue ?? true) }
            var node = Node()
            if case .string(let reference)? = keywords["$ref"] {
                let parts = reference.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                var name = String(parts[0])
                if name.hasPrefix("./") { name.removeFirst(2) }
                node.reference = self.node(for: (name.isEmpty ? document : name) + "#" + (parts.count == 2 ? parts[1] : ""))
                return node
            }
            node.types = keywords["type"].map { ($0.listValue ?? [$0]).compactMap(\.stringValue) }
            node.enumValues = keywords["enum"]?.listValue
            node.minimum = keywords["minimum"]
            node.minLength = keywords["minLength"].flatMap(JSONSchemaValidator.count)
            if case .string(let pattern)? = keywords["pattern"] { node.pattern = self.pattern(pattern) }
            switch keywords["items"] {
            case .list(let positional)?: node.itemsList = positional.map { subschema($0, in: document) }
            case let each?: node.items = subschema(each, in: document)
            case nil: break
            }
            node.additionalItems = keywords["additionalItems"].map { subschema($0, in: document) }
            node.minItems = keywords["minItems"].flatMap(JSONSchemaValidator.count)
            node.maxItems = keywords["maxItems"].flatMap(JSONSchemaValidator.count)
            for (name, property) in (keywords["properties"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
                node.properties[name] = subschema(property, in: document)
            }
            for (pattern, property) in (keywords["patternProperties"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
                node.patternProperties.append((self.pattern(pattern), subschema(property, in: document)))
            }
            node.additionalProperties = keywords["additionalProperties"].map { subschema($0, in: document) }
            node.required = keywords["required"]?.listValue?.compactMap(\.stringValue) ?? []
            node.minProperties = keywords["minProperties"].flatMap(JSONSchemaValidator.count)
            node.allOf = keywords["allOf"]?.listValue?.map { subschema($0, in: document) } ?? []
            node.anyOf = keywords["anyOf"]?.listValue?.map { subschema($0, in: document) } ?? []
            node.oneOf = keywords["oneOf"]?.listValue?.map { subschema($0, in: document) } ?? []
            node.not = keywords["not"].map { subschema($0, in: document) }
            return node
        }

        mutating func pattern(_ source: String) -> Int {
            if let index = patterns.firstIndex(of: source) { return index }
            patterns.append(source)
            return patterns.count - 1
        }
    }

    static func count(_ value: FlagValue) -> Int? {
        switch value {
        case .int(let number): number
        case .double(let number) where number.rounded() == number && abs(number) < 1e15: Int(number)
        default: nil
        }
    }

    /// An ECMA-262 pattern as ICU reads it the same way: outside a class, `.` matches anything
    /// but ECMA's four line terminators (ICU's `.` also stops at form feed, vertical tab and
    /// NEL), `\d` only ASCII digits (ICU's takes every Unicode digit), and `$` the end of the
    /// text only (ICU's also matches before a final line terminator).
    static func icuPattern(_ pattern: String) -> String {
        var result = ""
        var inClass = false
        var escaped = false
        for character in pattern {
            if escaped {
                escaped = false
                result += character == "d" ? (inClass ? "0-9" : "[0-9]") : "\\\(character)"
                continue
            }
            switch character {
            case "\\": escaped = true
            case "[" where !inClass: inClass = true; result.append(character)
            case "]" where inClass: inClass = false; result.append(character)
            case "." where !inClass: result += "[^\\n\\r\\u2028\\u2029]"
            case "$" where !inClass: result += "\\z"
            default: result.append(character)
            }
        }
        return result
    }

    static func matches(_ instance: FlagValue, types: [String]) -> Bool {
        types.contains { name in
            switch (name, instance) {
            case ("null", .null), ("boolean", .bool), ("string", .string), ("array", .list), ("object", .object): return true
            case ("number", .int), ("number", .double), ("integer", .int): return true
            case ("integer", .double(let value)): return value.isFinite && value.rounded() == value
            default: return false
            }
        }
    }

    static func number(_ value: FlagValue) -> Double? {
        switch value {
        case .int(let number): Double(number)
        case .double(let number): number
        default: nil
        }
    }

    /// JSON equality: numbers by value (`1` equals `1.0`), text by its code points (not by
    /// Swift's canonical equivalence), lists and objects member by member.
    static func equal(_ a: FlagValue, _ b: FlagValue) -> Bool {
        if let x = number(a), let y = number(b) { return x == y }
        switch (a, b) {
        case (.string(let x), .string(let y)): return x.utf8.elementsEqual(y.utf8)
        case (.list(let x), .list(let y)): return x.count == y.count && zip(x, y).allSatisfy { equal($0, $1) }
        case (.object(let x), .object(let y)): return x.count == y.count && x.allSatisfy { key, value in y[key].map { equal(value, $0) } ?? false }
        default: return a == b
        }
    }

    /// A scalar as JSON (text cut at 40 characters), a list or an object by its kind.
    static func describe(_ value: FlagValue) -> String {
        switch value {
        case .list: return "a list"
        case .object: return "an object"
        case .string(let text) where text.count > 40: return FlagJSON.string(.string(String(text.prefix(40)))).dropLast() + "…\""
        default: return FlagJSON.string(value)
        }
    }

    static func typeWithArticle(_ name: String) -> String {
        switch name {
        case "integer": "a whole number"
        case "array": "a list"
        case "null": "null"
        case "boolean": "a Boolean"
        case "object": "an object"
        default: "a \(name)"
        }
    }

    static func list(_ items: [String], joinedBy word: String) -> String {
        items.count <= 1 ? items.joined() : items.dropLast().joined(separator: ", ") + " \(word) " + items.last!
    }
}
