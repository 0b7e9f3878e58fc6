package import FeatureFlags
package import Foundation

/// OpenFeature Remote Evaluation Protocol, static-context (client) side: one bulk
/// evaluation of every flag for the context, with ETags.
///
/// Configured like OFREP's own providers: the base URL is the part before `/ofrep/v1`, and
/// headers carry the credentials (`Authorization: Bearer …` or `X-API-Key: …`).
///
/// - Request: `POST {base}/ofrep/v1/evaluate/flags` with `{"context": {"targetingKey": …, …}}`.
/// - 200: `{"flags": [ {key, value?, reason?, variant?, metadata?} | {key, errorCode, errorDetails?} ]}`;
///   an item without `value` means "use the code default" (ADR 0006); integers and doubles
///   keep their JSON form; reasons pass through, unknown ones too. `eventStreams` (OFREP
///   ADR-0008) is read into the answer's streams: entries of type
///   `sse` with a `url`, or an `endpoint` whose missing `origin` is the base URL's. The flag
///   set's `metadata.version`, when present, is the snapshot's version.
/// - 304: not modified. 400: `{errorCode, errorDetails}` (the error event says which).
///   401/403 are fatal; 429 carries `Retry-After` (the fetcher reads it; the provider waits that long).
package struct OFREPEndpoint: EndpointFormat {
    private var baseURL: URL { baseURLReference.url }
    // Held by reference: a stored `URL` has no fixed layout on Apple platforms (FixedLayout.swift).
    private let baseURLReference: URLReference
    private let headers: [String: String]

    /// `"ofrep"`.
    package var name: String { "ofrep" }

    /// An endpoint for the service at `baseURL` (before `/ofrep/v1`).
    package init(baseURL: URL, headers: [String: String] = [:]) {
        self.baseURLReference = URLReference(baseURL)
        self.headers = headers
    }

    /// `POST …/ofrep/v1/evaluate/flags`.
    package func request(for context: EvaluationContext, etag: String?) throws(FlagError) -> FlagRequest {
        var fields = headers
        fields["Content-Type"] = "application/json"
        fields["Accept"] = "application/json"
        if let etag { fields["If-None-Match"] = etag }
        let url = try EndpointSupport.url(baseURL, appending: ["ofrep", "v1", "evaluate", "flags"])
        let body = FlagJSON.bytes(.object(["context": context.flagValue]), sortedKeys: true)
        return FlagRequest(url: url, method: "POST", headers: fields, body: body)
    }

    /// Reads a bulk evaluation.
    package func decode(_ response: FlagResponse, for context: EvaluationContext) throws(FlagError) -> DecodedFlags {
        let top = try EndpointSupport.object(response.body, service: "OFREP")
        guard case .list(let items)? = top["flags"] else {
            throw FlagError(.parseError, "OFREP: the answer has no \"flags\" list")
        }
        var flags: [String: FlagEntry] = [:]
        flags.reserveCapacity(items.count)
        for (n, item) in items.enumerated() {
            guard case .object(let o) = item else {
                throw FlagError(.parseError, "OFREP: flags[\(n)] is \(item.typeNameWithArticle), expected an object")
            }
            let path = "OFREP flags[\(n)]"
            guard let key = try EndpointSupport.string(o, "key", at: path) else {
                throw FlagError(.parseError, "\(path) has no key")
            }
            guard flags[key] == nil else { throw FlagError(.parseError, "OFREP: flag \"\(key)\" appears twice") }
            var metadata: [String: FlagValue] = [:]
            switch o["metadata"] {
            case nil, .null?: break
            case .object(let m)?: metadata = m
            case let other?: throw FlagError(.parseError, "\(path).metadata is \(other.typeNameWithArticle), expected an object")
            }
            if let code = try EndpointSupport.string(o, "errorCode", at: path) {
                if let details = try EndpointSupport.string(o, "errorDetails", at: path) { metadata["errorDetails"] = .string(details) }
                flags[key] = FlagEntry(value: nil, reason: .error, errorCode: FlagErrorCode(wire: code), metadata: metadata)
                continue
            }
            flags[key] = FlagEntry(
                value: o["value"], variant: try EndpointSupport.string(o, "variant", at: path),
                reason: try EndpointSupport.string(o, "reason", at: path).map(FlagReason.init(rawValue:)), metadata: metadata)
        }
        // The flag set's `metadata.version` (a string or a number), when the service gives one,
        // is the snapshot's version; other metadata is not kept.
        let version: String?
        switch top["metadata"]?.objectValue?["version"] {
        case .string(let text)?: version = text
        case let number? where number.doubleValue != nil: version = EndpointSupport.text(number)
        default: version = nil
        }
        return .flags(flags, version: version, streams: EventStreamLink.list(from: top["eventStreams"], base: baseURL).links)
    }

    /// `CODE: details` from an OFREP error body.
    package func failureDetail(_ response: FlagResponse) -> String? {
        guard let o = try? EndpointSupport.object(response.body, service: "OFREP") else { return nil }
        let code = o["errorCode"]?.stringValue
        let details = o["errorDetails"]?.stringValue.map { String($0.prefix(200)) }
        switch (code, details) {
        case let (code?, details?): return "\(code): \(details)"
        case let (code?, nil): return code
        case let (nil, details?): return details
        default: return nil
        }
    }
}
