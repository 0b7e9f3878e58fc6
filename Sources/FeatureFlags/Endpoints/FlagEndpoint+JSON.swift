public import Foundation

extension FlagEndpoint {
    /// The package's JSON flag document: the context POSTed to `url` with `headers`, conditional via `If-None-Match`.
    public static func json(post url: URL, headers: [String: String] = [:]) -> FlagEndpoint {
        FlagEndpoint(JSONFlagEndpoint(mode: .post(URLReference(url)), headers: headers))
    }

    /// A static JSON flag document — the same for every device, on a CDN, an object store or any
    /// static host — by `GET url`: no context is sent (a static host answers a POST with 405,
    /// 403 or 501), and the request is conditional via `If-None-Match`. Per-context documents
    /// by path: ``json(urlTemplate:headers:)``.
    public static func json(get url: URL, headers: [String: String] = [:]) -> FlagEndpoint {
        FlagEndpoint(JSONFlagEndpoint(mode: .get(URLReference(url)), headers: headers))
    }

    /// The JSON flag document by `GET urlTemplate`, `{attribute}`s filled from the context; a missing one is `INVALID_CONTEXT`.
    public static func json(urlTemplate: String, headers: [String: String] = [:]) -> FlagEndpoint {
        FlagEndpoint(JSONFlagEndpoint(mode: .template(urlTemplate), headers: headers))
    }
}
