package import Foundation

/// Small pieces every endpoint shares.
package enum EndpointSupport {
    /// The JSON object of a response body, or a PARSE_ERROR naming the service.
    package static func object(_ body: [UInt8], service: String) throws(FlagError) -> [String: FlagValue] {
        let value: FlagValue
        do {
            value = try FlagValue(json: body)
        } catch {
            throw FlagError(.parseError, "\(service): \(error.message)")
        }
        guard case .object(let members) = value else {
            throw FlagError(.parseError, "\(service): the answer is \(value.typeNameWithArticle), expected an object")
        }
        return members
    }

    /// A string member, nil when absent or null, PARSE_ERROR when of another type.
    package static func string(_ members: [String: FlagValue], _ name: String, at path: String) throws(FlagError) -> String? {
        switch members[name] {
        case nil, .null?: return nil
        case .string(let s)?: return s
        case let other?: throw FlagError(.parseError, "\(path).\(name) is \(other.typeNameWithArticle), expected a string")
        }
    }

    /// `url` with `components` appended as path segments (each percent-encoded).
    package static func url(_ base: URL, appending components: [String], query: [(String, String)] = []) throws(FlagError) -> URL {
        var text = base.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        for component in components {
            text += "/" + (component.addingPercentEncoding(withAllowedCharacters: pathSegment) ?? component)
        }
        if !query.isEmpty {
            text += "?" + query.map { name, value in
                (name.addingPercentEncoding(withAllowedCharacters: unreserved) ?? name) + "="
                    + (value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? value)
            }.joined(separator: "&")
        }
        guard let url = URL(string: text) else { throw FlagError(.general, "cannot form a URL from the base URL") }
        return url
    }

    private static let pathSegment = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:")
    /// RFC 3986's unreserved characters: left as they are in a path segment or a query part.
    static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    /// A scalar attribute as text (what query strings and text-only services carry).
    package static func text(_ value: FlagValue) -> String? {
        switch value {
        case .string(let s): return s
        case .int(let i): return String(i)
        case .double(let d): return String(d)
        case .bool(let b): return String(b)
        default: return nil
        }
    }
}
