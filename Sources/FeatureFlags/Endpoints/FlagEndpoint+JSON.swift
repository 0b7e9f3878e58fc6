public import Foundation

extension FlagEndpoint {
    /// The package's JSON flag document: the context POSTed to `url` with `headers`, conditional via `If-None-Match`.
    public static func json(post url: URL, headers: [String: String] = [:]) -> FlagEndpoint {
        FlagEndpoint(JSONFlagEndpoint(post: url, headers: headers))
    }

    /// The JSON flag document by `GET urlTemplate`, `{attribute}`s filled from the context; a missing one is `INVALID_CONTEXT`.
    public static func json(urlTemplate: String, headers: [String: String] = [:]) -> FlagEndpoint {
        FlagEndpoint(JSONFlagEndpoint(urlTemplate: urlTemplate, headers: headers))
    }
}
