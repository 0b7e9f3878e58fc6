/// What one fetch attempt came to, as ``FeatureFlagProvider/refresh()`` returns it.
public indirect enum FetchOutcome: Sendable, Equatable {
    /// A new snapshot was activated; these keys' effective values changed.
    case updated(Set<String>)
    /// The service confirmed the values served (304, or the same content again).
    case unchanged
    /// The fetch failed; the Last-Known-Good stays.
    case failed(FetchError)
    /// The payload broke the schema and was rejected whole; the Last-Known-Good stays.
    case rejected([FlagViolation])
    /// The answer was for a context that is no longer current, and was dropped.
    case discarded
    /// No request was sent (no network, a `Retry-After`, an earlier fatal error, shut down); the text says why.
    case skipped(String)

    /// Whether the values served are the service's current ones (`updated` or `unchanged`).
    public var isSuccess: Bool {
        switch self {
        case .updated, .unchanged: return true
        case .failed, .rejected, .discarded, .skipped: return false
        }
    }

    /// The case's name, for logs and metric labels: `updated`, `failed` …
    public var name: String {
        switch self {
        case .updated: return "updated"
        case .unchanged: return "unchanged"
        case .failed: return "failed"
        case .rejected: return "rejected"
        case .discarded: return "discarded"
        case .skipped: return "skipped"
        }
    }
}
