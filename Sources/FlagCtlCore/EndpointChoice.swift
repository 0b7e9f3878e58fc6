import FeatureFlags
import Foundation

/// The `--provider` names `flagctl eval` understands, and the endpoint each makes.
enum EndpointChoice {
    static let names = ["json"]

    /// The endpoint `name` for `url`. For `json`, a URL with `{placeholders}` is a GET
    /// template (a CDN), any other URL receives the context by POST.
    static func make(_ name: String, url: String, headers: [String: String]) throws(UsageError) -> any FlagEndpoint {
        switch name {
        case "json":
            if url.contains("{") {
                _ = try Formatting.url(url.replacingOccurrences(of: "{", with: "").replacingOccurrences(of: "}", with: ""), option: "endpoint")
                return JSONFlagEndpoint(urlTemplate: url, headers: headers)
            }
            return JSONFlagEndpoint(post: try Formatting.url(url, option: "endpoint"), headers: headers)
        default:
            let hint = ArgumentParser.suggestion(for: name, among: names).map { " (did you mean \($0)?)" } ?? ""
            throw UsageError(message: "unknown provider '\(name)'\(hint); choose one of: \(names.joined(separator: ", "))")
        }
    }
}
