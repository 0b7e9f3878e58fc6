import Foundation

/// The project's own endpoint: a ``FlagDocument`` by POSTing the context, GETting a static URL or a URL template.
internal struct JSONFlagEndpoint: EndpointFormat {
    /// POST the context to a URL, GET a static URL, or GET a URL template filled from the context.
    enum Mode: Sendable {
        case post(URLReference)  // by reference: `Support/FixedLayout.swift`
        case get(URLReference)
        case template(String)
    }

    let mode: Mode
    /// Sent with every request (authorisation …).
    let headers: [String: String]

    /// `"json"`.
    package var name: String { "json" }

    /// The request for `context`.
    package func request(for context: EvaluationContext, etag: String?) throws(FlagError) -> FlagRequest {
        var fields = headers
        fields["Accept"] = "application/json"
        if let etag { fields["If-None-Match"] = etag }
        switch mode {
        case .post(let url):
            fields["Content-Type"] = "application/json"
            let body = FlagJSON.bytes(.object(["context": context.flagValue]), sortedKeys: true)
            return FlagRequest(url: url.url, method: "POST", headers: fields, body: body)
        case .get(let url):
            return FlagRequest(url: url.url, method: "GET", headers: fields)
        case .template(let template):
            let expanded = try URLTemplate.expand(template, with: context)
            guard let url = URL(string: expanded) else {
                throw FlagError(.invalidContext, "the URL template does not give a valid URL")
            }
            return FlagRequest(url: url, method: "GET", headers: fields)
        }
    }

    /// Reads a ``FlagDocument`` and its advertised change streams (OFREP's `eventStreams`).
    package func decode(_ response: FlagResponse, for context: EvaluationContext) throws(FlagError) -> DecodedFlags {
        let value = try FlagValue(json: response.body)
        let document = try FlagDocument(parsing: value)
        let streams = EventStreamLink.list(from: value.objectValue?["eventStreams"], base: origin).links
        return .flags(document.flags, version: document.version, ttl: document.ttl, streams: streams)
    }

    /// The URL whose origin a stream's `endpoint` without `origin` is relative to.
    private var origin: URL? {
        switch mode {
        case .post(let url), .get(let url): return url.url
        case .template(let template): return URL(string: String(template.prefix { $0 != "{" }))
        }
    }

    /// The `error` member of a JSON error body, if there is one.
    package func failureDetail(_ response: FlagResponse) -> String? {
        guard let value = try? FlagJSON.parse(response.body), case .string(let message)? = value.objectValue?["error"] else {
            return nil
        }
        return String(message.prefix(200))
    }
}

/// `{name}` placeholders in a URL template.
enum URLTemplate {
    static func expand(_ template: String, with context: EvaluationContext) throws(FlagError) -> String {
        var out = ""
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{") {
            out += rest[..<open]
            guard let close = rest[open...].firstIndex(of: "}") else {
                throw FlagError(.general, "the URL template has an unclosed {")
            }
            let name = String(rest[rest.index(after: open)..<close])
            let value = name == "targetingKey" ? context.targetingKey : context[name].flatMap(EndpointSupport.text)
            guard let value, !value.isEmpty else {
                throw FlagError(.invalidContext, "the URL template needs the context attribute \"\(name)\"")
            }
            out += value.addingPercentEncoding(withAllowedCharacters: EndpointSupport.unreserved) ?? ""
            rest = rest[rest.index(after: close)...]
        }
        out += rest
        return out
    }
}
