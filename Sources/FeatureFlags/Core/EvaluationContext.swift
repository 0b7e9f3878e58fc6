/// Who is asking: a targeting key (usually the user id) plus attributes. Immutable; changing it is "identify".
public struct EvaluationContext: Sendable, Hashable, CustomStringConvertible {
    /// Well-known attribute names, so every module spells them the same way.
    package enum Attribute {
        /// The venue (store, restaurant, site) the device serves.
        public static let venue = "venue"
        /// The region, e.g. `us`.
        public static let region = "region"
        /// The app's version, `X.Y.Z` or `X.Y.Z.build`.
        public static let appVersion = "app_version"
    }

    /// The targeting key (user id, device id), or nil for an anonymous context.
    public let targetingKey: String?
    /// Attributes by name.
    public let attributes: [String: FlagValue]
    /// A stable, opaque id (32 hex digits, no attribute values), safe for logs; equal contexts share it.
    public let fingerprint: String

    /// A context with a targeting key and attributes.
    public init(targetingKey: String? = nil, attributes: [String: FlagValue] = [:]) {
        self.targetingKey = targetingKey
        self.attributes = attributes
        var canonical: [String: FlagValue] = ["a": .object(attributes)]
        canonical["k"] = targetingKey.map(FlagValue.string) ?? .null
        let bytes = Array("featureflags.context.v1\n".utf8) + FlagJSON.bytes(.object(canonical), sortedKeys: true)
        self.fingerprint = String(SHA256.hex(bytes).prefix(32))
    }

    /// The anonymous context: no targeting key, no attributes.
    public static let anonymous = EvaluationContext()

    /// The value of attribute `name`.
    public subscript(name: String) -> FlagValue? { attributes[name] }

    /// A string attribute, or nil when missing or not a string.
    public func string(_ name: String) -> String? { attributes[name]?.stringValue }

    /// This context with attribute `name` set to `value` (nil removes it).
    public func with(_ name: String, _ value: FlagValue?) -> EvaluationContext {
        var attributes = self.attributes
        attributes[name] = value
        return EvaluationContext(targetingKey: targetingKey, attributes: attributes)
    }

    /// This context with another targeting key.
    public func with(targetingKey: String?) -> EvaluationContext {
        EvaluationContext(targetingKey: targetingKey, attributes: attributes)
    }

    /// The OpenFeature flat form: the attributes plus `targetingKey` when present.
    public var flagValue: FlagValue {
        var members = attributes
        if let targetingKey { members["targetingKey"] = .string(targetingKey) }
        return .object(members)
    }

    /// The context from its flat form (see ``flagValue``); nil unless `value` is an object.
    public init?(flagValue value: FlagValue) {
        guard case .object(var members) = value else { return nil }
        let key = members.removeValue(forKey: "targetingKey")?.stringValue
        self.init(targetingKey: key, attributes: members)
    }

    /// The fingerprint only: descriptions end up in logs, attribute values must not.
    public var description: String { "EvaluationContext(\(fingerprint))" }

    /// Equal when targeting key and attributes are equal.
    public static func == (lhs: EvaluationContext, rhs: EvaluationContext) -> Bool {
        lhs.fingerprint == rhs.fingerprint && lhs.targetingKey == rhs.targetingKey && lhs.attributes == rhs.attributes
    }

    /// Hashes the fingerprint.
    public func hash(into hasher: inout Hasher) { hasher.combine(fingerprint) }
}
