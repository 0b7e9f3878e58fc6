package import Foundation

/// An endpoint whose rules are evaluated on the device (flagd's), kept in ``FlagSnapshot/heldRules`` for any later context.
package protocol LocalEvaluationEndpoint: EndpointFormat {
    /// The rules in a 2xx response and their change streams; unreadable is a `PARSE_ERROR`.
    func rules(
        from response: FlagResponse, etag: EntityTag?, fetchedAt: Date, envelope: [UInt8]?
    ) throws(FlagError) -> (rules: any HeldRules, streams: [EventStreamLink])

    /// Rules the fallback file kept, read again; nil when the document no longer reads.
    func rules(kept document: [UInt8], options: String, etag: EntityTag?, fetchedAt: Date, envelope: [UInt8]?) -> (any HeldRules)?
}

extension LocalEvaluationEndpoint {
    /// Itself.
    package var asLocalEvaluation: (any LocalEvaluationEndpoint)? { self }
}
