/// A change of served values, as ``FeatureFlagClient/changes()`` delivers it: the flags whose
/// effective values changed (every flag when the kill switch flips), the snapshot now served,
/// and whether the kill switch is on after the change.
public typealias FlagChange = (keys: Set<String>, snapshot: FlagSnapshot, killSwitchActive: Bool)
