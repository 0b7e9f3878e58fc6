/// What a hook is told about the read it runs around (OpenFeature's hook context). Immutable.
public struct FlagHookContext: Sendable {
    /// The flag's name.
    public let flagKey: String
    /// The type the read asks for.
    public let valueType: FlagValueType
    /// The key's default value as JSON; nil when the key's conversion cannot write it.
    public let defaultValue: FlagValue?
    /// The context the client serves (for merged contexts, their merged identity).
    public let evaluationContext: EvaluationContext
    /// Which client and flag service answer the read.
    public let providerMetadata: FlagProviderMetadata

    /// A hook context (for testing hooks).
    public init(
        flagKey: String, valueType: FlagValueType, defaultValue: FlagValue?, evaluationContext: EvaluationContext,
        providerMetadata: FlagProviderMetadata
    ) {
        self.flagKey = flagKey
        self.valueType = valueType
        self.defaultValue = defaultValue
        self.evaluationContext = evaluationContext
        self.providerMetadata = providerMetadata
    }
}

/// Names the client answering a read, for hooks (OpenFeature's provider metadata).
public struct FlagProviderMetadata: Sendable, Hashable {
    /// The client's name: `FeatureFlagProvider/ofrep`, `FallbackClient`, `InMemoryFlagClient`.
    public let name: String

    /// Metadata naming `name`.
    public init(name: String) { self.name = name }
}

/// One hook's scratch space for one read, shared by its stages (a tracing span opened in
/// `before` and closed in `finally`); never seen by other hooks or other reads.
public struct FlagHookData: Sendable {
    private var values: [String: any Sendable] = [:]

    /// Empty.
    public init() {}

    /// The value stored under `key`.
    public subscript(key: String) -> (any Sendable)? {
        get { values[key] }
        set { values[key] = newValue }
    }
}
