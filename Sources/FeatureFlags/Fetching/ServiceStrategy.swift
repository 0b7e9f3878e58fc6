/// How a fetcher with several endpoints (services) combines them; OpenFeature's Multi-Provider strategies
/// (specification Appendix A), applied per flag, or the chain. Docs/Providers.md ("Several services").
public enum ServiceStrategy: Sendable, Equatable {
    /// Services tried in order; the first whole document that arrives serves every flag (the default).
    case chain
    /// Every service asked at once; each flag from the first service that has it. "Not found" moves on;
    /// a service's per-flag error is the answer.
    case firstMatch
    /// Every service asked at once; each flag from the first service that answers it without an error.
    case firstSuccessful
    /// Every service asked at once; where all agree, the value; where they disagree, the value of the service
    /// at `answering` (an index into the endpoints) and a ``FlagEvent/servicesDisagree(flag:fingerprint:values:)``
    /// event. A flag any service lacks or answers with an error is that error.
    case comparison(answering: Int = 0)

    /// The strategy's name on the command line and in guides: `chain`, `first-match`, `first-successful`, `comparison`.
    public var name: String {
        switch self {
        case .chain: "chain"
        case .firstMatch: "first-match"
        case .firstSuccessful: "first-successful"
        case .comparison: "comparison"
        }
    }
}
