import FeatureFlags
/// The ``FlagError``s ``FlagOverrides`` throws.
extension FlagError {
    /// This build forbids overrides (`allowed: false`): nothing was changed.
    static let overridesForbidden = FlagError(.general, "overrides are not allowed in this build")

    /// The change is in effect for this run but could not be saved.
    static func overrideNotSaved(_ reason: String) -> FlagError {
        FlagError(.general, "override in effect for this run only; saving it failed: \(reason)")
    }

    /// Already ``FlagOverrides/maximumCount`` overrides: clear some first.
    static func tooManyOverrides(limit: Int) -> FlagError { FlagError(.general, "too many overrides (at most \(limit))") }

    /// The key's conversion cannot express the value as JSON, so it cannot be stored.
    static func unencodableOverride(flag: String) -> FlagError {
        FlagError(.typeMismatch, "the value for \(flag) cannot be written as JSON")
    }

    /// The change would make a file the next launch cannot read (too large or deep): nothing was changed.
    static func unreadableOverrides(_ reason: String) -> FlagError {
        FlagError(.general, "not changed: the overrides file would not read back (\(reason))")
    }

    /// An empty flag name.
    static let emptyOverrideName = FlagError(.general, "a flag name cannot be empty")

    /// An overrides file to load is missing or not a JSON object of flag names to values.
    static func unusableOverrideFile(_ reason: String) -> FlagError { FlagError(.parseError, reason) }
}
