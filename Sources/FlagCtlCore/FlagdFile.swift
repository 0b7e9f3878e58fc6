import FeatureFlags

/// Telling a flagd flag-definition document from FeatureFlags' own flag document.
enum FlagdFile {
    /// Whether `value` is a flagd document: its `$schema` names flagd, its `flags` is a list,
    /// or a flag is an object with `variants` or `state` (our documents hold plain values).
    static func looksLike(_ value: FlagValue) -> Bool {
        guard case .object(let top) = value else { return false }
        if let schema = top["$schema"]?.stringValue, schema.contains("flagd") { return true }
        if top["$evaluators"] != nil { return true }
        switch top["flags"] {
        case .list?: return true
        case .object(let flags)?:
            return flags.values.contains { flag in
                guard case .object(let members) = flag else { return false }
                return members["variants"] != nil || members["state"] != nil
            }
        default: return false
        }
    }
}
