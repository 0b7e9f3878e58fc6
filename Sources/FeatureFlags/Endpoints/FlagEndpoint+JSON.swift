public import Foundation

extension FlagEndpoint {
    /// The package's own JSON flag document, the context POSTed to `url` as
    /// `{"context": {"targetingKey": …, …attributes}}`; `headers` (authorisation …) go with
    /// every request. Conditional requests use the stored entity tag (`If-None-Match`); the
    /// answer may advertise change streams (`eventStreams`, OFREP's form). See Docs/Providers.md.
    public static func json(post url: URL, headers: [String: String] = [:]) -> FlagEndpoint {
        FlagEndpoint(JSONFlagEndpoint(post: url, headers: headers))
    }

    /// The package's JSON flag document from a static host or CDN: `GET urlTemplate` with
    /// `{attribute}` placeholders (such as `https://cdn.example.com/flags/{venue}.json`) filled
    /// from the context's attribute or `targetingKey`, percent-encoded as one path segment. A
    /// context without a placeholder's attribute is an `INVALID_CONTEXT` fetch failure.
    public static func json(urlTemplate: String, headers: [String: String] = [:]) -> FlagEndpoint {
        FlagEndpoint(JSONFlagEndpoint(urlTemplate: urlTemplate, headers: headers))
    }
}
