/// A change from ``FeatureFlagClient/changes()``: changed flags, new snapshot, kill switch state.
public typealias FlagChange = (keys: Set<String>, snapshot: FlagSnapshot, killSwitchActive: Bool)
