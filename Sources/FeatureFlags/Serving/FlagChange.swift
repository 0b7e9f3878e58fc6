/// A change of served values, delivered by ``FeatureFlagClient/changes()``.
public struct FlagChange: Sendable {
    /// The flags whose effective values changed (every flag, when the kill switch flips).
    public let keys: Set<String>
    /// The snapshot now being served.
    public let snapshot: FlagSnapshot
    /// Whether the kill switch is on after the change.
    public let killSwitchActive: Bool

    /// A change.
    public init(keys: Set<String>, snapshot: FlagSnapshot, killSwitchActive: Bool) {
        self.keys = keys
        self.snapshot = snapshot
        self.killSwitchActive = killSwitchActive
    }
}
