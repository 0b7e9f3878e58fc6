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
    /// The answering client and service (OpenFeature's provider name), e.g. `FeatureFlagProvider/ofrep`.
    public let providerName: String

    /// A hook context (for testing hooks).
    public init(
        flagKey: String, valueType: FlagValueType, defaultValue: FlagValue?, evaluationContext: EvaluationContext,
        providerName: String
    ) {
        self.flagKey = flagKey
        self.valueType = valueType
        self.defaultValue = defaultValue
        self.evaluationContext = evaluationContext
        self.providerName = providerName
    }
}
