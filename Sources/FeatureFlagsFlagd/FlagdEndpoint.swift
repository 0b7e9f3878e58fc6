package import Foundation
package import FeatureFlags

/// A flagd flag-definition file (`https://flagd.dev/schema/v0/flags.json`) from any URL — a
/// CDN, an object store, `flagctl serve` — evaluated on the device (``FlagdDefinitions``).
///
/// - Request: `GET {url}` with `If-None-Match` (the same for every context: one cached object
///   serves a whole fleet).
/// - 200: the document. A document that is not JSON or has no `flags` is a `PARSE_ERROR`;
///   a flag that breaks the format is served as its code default with `PARSE_ERROR`, the
///   others normally. An optional top-level `eventStreams` list (OFREP's form) names change
///   streams; flagd's schema allows extra top-level members.
/// - 304: the rules held are current (nothing is decoded or written).
package struct FlagdEndpoint: LocalEvaluationEndpoint {
    private var url: URL { urlReference.url }
    // Held by reference: a stored `URL` has no fixed layout on Apple platforms (FixedLayout.swift).
    private let urlReference: URLReference
    private let headers: [String: String]
    /// How `fractional` buckets.
    package let bucketing: FractionalBucketing

    /// `"flagd"`.
    package var name: String { "flagd" }

    /// An endpoint for the document at `url`, with extra `headers` (credentials for a private
    /// bucket) and a bucketing mode (flagd's current high-precision one by default).
    package init(url: URL, headers: [String: String] = [:], bucketing: FractionalBucketing = .highPrecision) {
        self.urlReference = URLReference(url)
        self.headers = headers
        self.bucketing = bucketing
    }

    /// `GET {url}`, conditional on `etag`. The context is not sent: the rules are everyone's.
    package func request(for context: EvaluationContext, etag: String?) throws(FlagError) -> FlagRequest {
        var fields = headers
        fields["Accept"] = "application/json"
        if let etag { fields["If-None-Match"] = etag }
        return FlagRequest(url: url, headers: fields)
    }

    /// The compiled document.
    package func definitions(from response: FlagResponse) throws(FlagError) -> FlagdDefinitions {
        do {
            return try FlagdDefinitions.parse(response.body, bucketing: bucketing)
        } catch {
            let first = error.problems.first.map(\.description) ?? "unreadable"
            throw FlagError(.parseError, "flagd: \(first)")
        }
    }

    /// The compiled document, held as ``LocalRules``, and the change streams it names.
    package func rules(
        from response: FlagResponse, etag: EntityTag?, fetchedAt: Date, envelope: [UInt8]?
    ) throws(FlagError) -> (rules: any HeldRules, streams: [EventStreamLink]) {
        let definitions = try definitions(from: response)
        let rules = LocalRules(definitions: definitions, document: response.body, etag: etag, fetchedAt: fetchedAt, envelope: envelope)
        return (rules, definitions.streams(base: url))
    }

    /// Rules the fallback file kept, compiled again with the bucketing they were fetched under
    /// (their `options`); nil when it is not a mode this build knows or the document no longer
    /// parses.
    package func rules(kept document: [UInt8], options: String, etag: EntityTag?, fetchedAt: Date, envelope: [UInt8]?) -> (any HeldRules)? {
        guard let bucketing = FractionalBucketing(rawValue: options),
            let definitions = try? FlagdDefinitions.parse(document, bucketing: bucketing)
        else { return nil }
        return LocalRules(definitions: definitions, document: document, etag: etag, fetchedAt: fetchedAt, envelope: envelope)
    }

    /// The document evaluated for `context` now (for callers that want values, not rules).
    package func decode(_ response: FlagResponse, for context: EvaluationContext) throws(FlagError) -> DecodedFlags {
        let definitions = try definitions(from: response)
        return .flags(definitions.evaluate(for: context), version: definitions.version, streams: definitions.streams(base: url))
    }
}
