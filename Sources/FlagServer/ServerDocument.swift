public import FeatureFlags
public import Foundation

/// What a ``FlagServer`` serves: a ``FlagDocument``'s defaults plus targeting rules, evaluated
/// per request into a plain ``FlagDocument`` for the asking context.
///
/// ```json
/// { "meta_config_version": "2025-08-04T10:00:00Z", "meta_ttl_seconds": 86400,
///   "flags": { "plan_themeColor": "#3498DB", "kill_switch": false },
///   "rules": [ { "name": "auralink-business",
///                "when": { "partner": "auralink", "plan_tier": ["business", "enterprise"] },
///                "flags": { "plan_themeColor": "#2C3E50" } } ] }
/// ```
///
/// For each flag, the first rule that matches the context (every `when` condition holds) and
/// sets that flag wins: reason `TARGETING_MATCH`, variant = the rule's name. Flags no
/// matching rule sets keep the defaults (reason `DEFAULT`). So a venue rule listed first can
/// switch one feature on while plan rules below it still choose the theme. A condition is a
/// value (equal) or a list (one of); `targetingKey` names the targeting key; an empty `when`
/// matches every context.
public struct ServerDocument: Sendable, Equatable {
    /// One targeting rule.
    public struct Rule: Sendable, Equatable {
        /// The rule's name, reported as the variant of the flags it sets.
        public var name: String
        /// Attribute → accepted values (any of them).
        public var conditions: [String: [FlagValue]]
        /// The flags the rule sets.
        public var flags: [String: FlagEntry]

        /// A rule.
        public init(name: String, conditions: [String: [FlagValue]], flags: [String: FlagEntry]) {
            self.name = name
            self.conditions = conditions
            self.flags = flags
        }

        /// Whether `context` satisfies every condition.
        public func matches(_ context: EvaluationContext) -> Bool {
            conditions.allSatisfy { attribute, accepted in
                let actual: FlagValue? =
                    attribute == "targetingKey" ? context.targetingKey.map(FlagValue.string) : context[attribute]
                guard let actual else { return false }
                return accepted.contains(actual)
            }
        }
    }

    /// Defaults, version and TTL.
    package var base: FlagDocument
    /// Rules, in order.
    public var rules: [Rule]

    /// A document from its parts (the tools' form).
    package init(base: FlagDocument, rules: [Rule] = []) {
        self.base = base
        self.rules = rules
    }

    /// A document: every context's `flags` (as the service would send them), then `rules`
    /// in order, the first that matches a context overriding those flags for it.
    public init(flags: [String: FlagEntry], version: String? = nil, ttl: TimeInterval? = nil, rules: [Rule] = []) {
        self.init(base: FlagDocument(version: version, ttl: ttl, flags: flags), rules: rules)
    }

    /// The flags every context gets before rules.
    public var flags: [String: FlagEntry] {
        get { base.flags }
        set { base.flags = newValue }
    }
    /// The configuration version served (`version`), if any.
    public var version: String? {
        get { base.version }
        set { base.version = newValue }
    }

    /// Reads a server document (a ``FlagDocument`` plus an optional `rules` list).
    public init(parsing value: FlagValue) throws(FlagError) {
        base = try FlagDocument(parsing: value)
        var rules: [Rule] = []
        switch value.objectValue?["rules"] {
        case nil, .null?: break
        case .list(let items)?:
            for (n, item) in items.enumerated() { rules.append(try Self.rule(n, item)) }
        case let other?:
            throw FlagError(.parseError, "rules is \(other.typeNameWithArticle), expected a list")
        }
        self.rules = rules
    }

    /// Reads a server document from JSON bytes.
    public init(json bytes: some Sequence<UInt8>) throws(FlagError) {
        let value: FlagValue
        do {
            value = try FlagJSON.parse(bytes)
        } catch {
            throw FlagError(.parseError, error.description)
        }
        try self.init(parsing: value)
    }

    private static func rule(_ n: Int, _ item: FlagValue) throws(FlagError) -> Rule {
        guard case .object(let o) = item else { throw FlagError(.parseError, "rule \(n) is not an object") }
        let name = o["name"]?.stringValue ?? "rule-\(n)"
        var conditions: [String: [FlagValue]] = [:]
        switch o["when"] {
        case nil, .null?: break
        case .object(let when)?:
            for (attribute, accepted) in when { conditions[attribute] = accepted.listValue ?? [accepted] }
        case let other?:
            throw FlagError(.parseError, "rule \(name): when is \(other.typeNameWithArticle), expected an object")
        }
        guard case .object? = o["flags"] else { throw FlagError(.parseError, "rule \(name) has no flags object") }
        // Reuse the document reader for the rule's flags.
        let flags = try FlagDocument(parsing: .object(["flags": o["flags"] ?? .object([:])])).flags
        return Rule(name: name, conditions: conditions, flags: flags)
    }

    /// The document as JSON, readable by ``init(parsing:)``.
    public var flagValue: FlagValue {
        guard case .object(var top) = base.flagValue else { return base.flagValue }
        if !rules.isEmpty {
            top["rules"] = .list(
                rules.map { rule in
                    let flags = FlagDocument(flags: rule.flags).flagValue.objectValue?["flags"] ?? .object([:])
                    let when = rule.conditions.mapValues { $0.count == 1 ? $0[0] : FlagValue.list($0) }
                    return .object(["name": .string(rule.name), "when": .object(when), "flags": flags])
                })
        }
        return .object(top)
    }

    /// Canonical JSON bytes of ``flagValue``.
    public func jsonBytes() -> [UInt8] { FlagJSON.bytes(flagValue, sortedKeys: true) }

    /// The document evaluated for `context`. A flag no rule sets is `STATIC` (no context can
    /// change it); one that rules set, where none matched, is `DEFAULT`; a matching rule's is
    /// `TARGETING_MATCH` — unless the document gives the flag a reason of its own.
    package func evaluate(for context: EvaluationContext) -> FlagDocument {
        var flags: [String: FlagEntry] = [:]
        flags.reserveCapacity(base.flags.count)
        let ruled = Set(rules.lazy.flatMap(\.flags.keys))
        for (name, entry) in base.flags {
            flags[name] = FlagEntry(
                value: entry.value, variant: entry.variant, reason: entry.reason ?? (ruled.contains(name) ? .default : .static),
                errorCode: entry.errorCode, metadata: entry.metadata)
        }
        var targeted = Set<String>()
        for rule in rules where rule.matches(context) {
            for (name, entry) in rule.flags where !targeted.contains(name) {
                targeted.insert(name)
                flags[name] = FlagEntry(
                    value: entry.value, variant: entry.variant ?? rule.name, reason: entry.reason ?? .targetingMatch,
                    errorCode: entry.errorCode, metadata: entry.metadata)
            }
        }
        return FlagDocument(version: base.version, ttl: base.ttl, flags: flags)
    }
}
