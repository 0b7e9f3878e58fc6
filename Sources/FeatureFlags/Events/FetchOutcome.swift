/// What one fetch attempt came to: the answer of ``FeatureFlagProvider/refresh()`` and the
/// subject of ``FlagEvent/fetchCompleted(latencyMilliseconds:outcome:)``.
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
    /// No request was sent: no network path, a `Retry-After` still running, a fatal error
    /// earlier, or the provider shut down. The text says which.
    case skipped(String)

    /// Whether the service answered and the values served are its current ones (`updated`
    /// or `unchanged`): what a background task reports as its success.
    public var isSuccess: Bool {
        switch self {
        case .updated, .unchanged: return true
        case .failed, .rejected, .discarded, .skipped: return false
        }
    }

    /// A short name for logs and metric labels: `updated`, `unchanged`, `failed`, `rejected`,
    /// `discarded` or `skipped`.
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
