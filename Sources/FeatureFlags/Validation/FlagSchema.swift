import Foundation

/// What each flag may hold, checked before activation (``FeatureFlagProvider/Configuration/schema``). Types: `bool`, `int`,
/// `double`/`number`, `string`, `list`, `object`, `any`; constraints: `min`/`max`, `minLength`/`maxLength`, `pattern`,
/// `format` (`hex-color`, `iso8601`), `enum`, `items`, `minItems`/`maxItems`, `required`; `unknown_keys`: `allow`/`reject`.
public struct FlagSchema: Sendable {
    /// One flag's rule.
    package struct Rule: Sendable {
        /// The expected JSON type, or nil for any.
        package var type: String?
        /// Inclusive numeric bounds.
        package var min: Double?
        /// Inclusive numeric bounds.
        package var max: Double?
        /// String length bounds, in characters.
        package var minLength: Int?
        /// String length bounds, in characters.
        package var maxLength: Int?
        /// A regular expression the whole string must match.
        package var pattern: String?
        /// A named format: `hex-color` or `iso8601`.
        package var format: String?
        /// The allowed values.
        package var allowed: [FlagValue]?
        /// The rule for list elements.
        package var items: [Rule]
        /// List length bounds.
        package var minItems: Int?
        /// List length bounds.
        package var maxItems: Int?
        /// Whether the flag must be present (top level only).
        package var required: Bool
    }

    /// Rules by flag name.
    package var rules: [String: Rule]
    /// The largest payload accepted, in bytes.
    public var maxPayloadBytes: Int?
    /// Whether flags without a rule are errors.
    public var rejectUnknownKeys: Bool

    /// Reads a schema document; throws ``FlagError`` naming the offending rule.
    public init(parsing value: FlagValue) throws(FlagError) {
        guard case .object(let top) = value, case .object(let flags)? = top["flags"] else {
            throw FlagError(.parseError, "a schema is an object with a \"flags\" object")
        }
        var rules: [String: Rule] = [:]
        for (name, spec) in flags { rules[name] = try Self.rule(spec, path: "flags.\(name)") }
        self.rules = rules
        maxPayloadBytes = top["max_payload_bytes"]?.intValue
        switch top["unknown_keys"]?.stringValue {
        case nil, "allow"?: rejectUnknownKeys = false
        case "reject"?: rejectUnknownKeys = true
        case let other?: throw FlagError(.parseError, "unknown_keys must be allow or reject, not \(other)")
        }
    }

    /// Reads a schema from JSON bytes; throws ``FlagError`` if not JSON or not a schema.
    public init(json bytes: some Sequence<UInt8>) throws(FlagError) {
        let value: FlagValue
        do {
            value = try FlagJSON.parse(bytes)
        } catch {
            throw FlagError(.parseError, "schema: \(error.description)")
        }
        try self.init(parsing: value)
    }

    private static let types: Set<String> = ["bool", "int", "double", "number", "string", "list", "object", "any"]
    private static let formats: Set<String> = ["hex-color", "iso8601"]

    private static func rule(_ spec: FlagValue, path: String) throws(FlagError) -> Rule {
        guard case .object(let o) = spec else { throw FlagError(.parseError, "\(path): a rule is an object") }
        let type = o["type"]?.stringValue
        if let type, !types.contains(type) { throw FlagError(.parseError, "\(path): unknown type \(type)") }
        let format = o["format"]?.stringValue
        if let format, !formats.contains(format) { throw FlagError(.parseError, "\(path): unknown format \(format)") }
        let pattern = o["pattern"]?.stringValue
        if let pattern, (try? NSRegularExpression(pattern: pattern)) == nil {
            throw FlagError(.parseError, "\(path): pattern is not a valid regular expression")
        }
        var items: [Rule] = []
        if let itemSpec = o["items"] { items = [try rule(itemSpec, path: path + ".items")] }
        return Rule(
            type: type == "any" ? nil : type, min: o["min"]?.doubleValue, max: o["max"]?.doubleValue,
            minLength: o["minLength"]?.intValue, maxLength: o["maxLength"]?.intValue, pattern: pattern, format: format,
            allowed: o["enum"]?.listValue, items: items, minItems: o["minItems"]?.intValue, maxItems: o["maxItems"]?.intValue,
            required: o["required"]?.boolValue ?? false)
    }
}

/// The outcome of checking flags against a ``FlagSchema``.
package struct FlagValidationReport: Sendable, Equatable {
    /// Every broken rule, in a stable order.
    public var violations: [FlagViolation] = []
    /// Flags the schema has no rule for (allowed unless the schema rejects them).
    public var unknownKeys: [String] = []
    /// No violations.
    public var isValid: Bool { violations.isEmpty }
}
