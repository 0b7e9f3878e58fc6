/// A client's state, in OpenFeature's words.
public enum ProviderStatus: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Nothing loaded yet; reads return code defaults.
    case notReady = "NOT_READY"
    /// Serving current values.
    case ready = "READY"
    /// Serving values older than their TTL because refreshing failed.
    case stale = "STALE"
    /// The last attempt failed; serving the Last-Known-Good, will retry.
    case error = "ERROR"
    /// Cannot recover without a change (e.g. credentials rejected); no more attempts.
    case fatal = "FATAL"
    /// The context changed and values for the new one are being fetched.
    case reconciling = "RECONCILING"

    /// OpenFeature's name, as the documentation and `flagctl` spell it: `NOT_READY`.
    public var description: String { rawValue }
}
