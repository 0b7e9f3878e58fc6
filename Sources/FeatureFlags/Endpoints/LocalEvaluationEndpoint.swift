package import Foundation

/// An endpoint whose service sends rules rather than values: one document for every
/// context, evaluated on the device (flagd's, in `FeatureFlagsFlagd`). ``FlagFetcher`` asks it
/// for the rules and evaluates them for the context; the snapshot carries them
/// (``FlagSnapshot/heldRules``), so a ``FeatureFlagProvider`` keeps them in the fallback file
/// and serves any later context — after an identify, offline, after a relaunch — without
/// asking the service. The core's one seam to local evaluation: it names no rule format.
package protocol LocalEvaluationEndpoint: EndpointFormat {
    /// The rules in a 2xx response, and the change streams their document names; a document
    /// that cannot be read is a `PARSE_ERROR`.
    func rules(
        from response: FlagResponse, etag: EntityTag?, fetchedAt: Date, envelope: [UInt8]?
    ) throws(FlagError) -> (rules: any HeldRules, streams: [EventStreamLink])

    /// Rules the fallback file kept (their ``HeldRules/options`` as they were then), read
    /// again; nil when the document no longer reads.
    func rules(kept document: [UInt8], options: String, etag: EntityTag?, fetchedAt: Date, envelope: [UInt8]?) -> (any HeldRules)?
}

extension LocalEvaluationEndpoint {
    /// Itself.
    package var asLocalEvaluation: (any LocalEvaluationEndpoint)? { self }
}
