/// Why an override could not be set, cleared or loaded.
public enum FlagOverrideError: Error, Equatable, Sendable, CustomStringConvertible {
    /// This build forbids overrides (``FlagOverrides/init(fileURL:allowed:launch:)`` with
    /// `allowed: false`): nothing was changed.
    case forbidden
    /// The change is in effect for this run but could not be written, so it will not survive
    /// a relaunch.
    case notSaved(String)
    /// Already ``FlagOverrides/maximumCount`` overrides: clear some first.
    case tooMany(limit: Int)
    /// The key's conversion cannot express the value as JSON, so it cannot be stored.
    case unencodable(flag: String)
    /// An empty flag name.
    case emptyName
    /// An overrides file to load is missing or not a JSON object of flag names to values.
    case unusableFile(String)

    /// One line saying what went wrong.
    public var description: String {
        switch self {
        case .forbidden: return "overrides are not allowed in this build"
        case .notSaved(let reason): return "override in effect for this run only; saving it failed: \(reason)"
        case .tooMany(let limit): return "too many overrides (at most \(limit))"
        case .unencodable(let flag): return "the value for \(flag) cannot be written as JSON"
        case .emptyName: return "a flag name cannot be empty"
        case .unusableFile(let reason): return reason
        }
    }
}
