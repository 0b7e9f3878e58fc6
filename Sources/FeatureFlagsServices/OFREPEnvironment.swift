public import FeatureFlags
public import Foundation

/// An OFREP service's settings read from environment variables, as OFREP's SDKs read them
/// (OFREP ADR-0007): `OFREP_ENDPOINT` (the base URL, before `/ofrep/v1`), `OFREP_HEADERS`
/// (`Name=value` pairs separated by commas, percent-encoded as a whole) and `OFREP_TIMEOUT_MS`
/// (one fetch's budget, in milliseconds).
///
/// Settings given in code win: ``endpoint(baseURL:headers:)`` takes the URL given, else the
/// variable's, and lays the headers given over the variable's, field by field. An unset or empty
/// variable is no setting; a value that cannot be used is left out with a line in ``problems``
/// — it never stops the app, and it never quotes a header's value (it may be a secret).
///
/// ```swift
/// let settings = OFREPEnvironment()
/// for problem in settings.problems { logger.warning("\(problem)") }
/// let fetcher = FlagFetcher(
///     endpoint: settings.endpoint() ?? .ofrep(baseURL: URL(string: "https://flags.example.com")!),
///     configuration: .init(budget: settings.timeout ?? .seconds(2)))
/// ```
public struct OFREPEnvironment: Sendable, Equatable {
    /// `OFREP_ENDPOINT`: an absolute `http` or `https` URL; nil when unset or unusable.
    public var baseURL: URL? { baseURLReference?.url }
    // Held by reference: a stored `URL` has no fixed layout on Apple platforms (FixedLayout.swift).
    private let baseURLReference: URLReference?
    /// `OFREP_HEADERS`, parsed: the usable fields by name.
    public let headers: [String: String]
    /// `OFREP_TIMEOUT_MS` as a duration; nil when unset or not a whole number of milliseconds
    /// above 0.
    public let timeout: Duration?
    /// What could not be used, one line each, naming the variable (and a header by its name
    /// and place, never its value).
    public let problems: [String]

    /// The settings in `variables` (by default, this process's environment).
    public init(_ variables: [String: String] = ProcessInfo.processInfo.environment) {
        var problems: [String] = []
        baseURLReference = Self.url(variables["OFREP_ENDPOINT"], problems: &problems).map(URLReference.init)
        headers = Self.headers(variables["OFREP_HEADERS"], problems: &problems)
        timeout = Self.timeout(variables["OFREP_TIMEOUT_MS"], problems: &problems)
        self.problems = problems
    }

    /// The OFREP endpoint for `baseURL`, else ``baseURL``, with `headers` laid over
    /// ``headers`` (a field both name — in any letter case — is given by `headers`); nil when
    /// neither names a service.
    public func endpoint(baseURL: URL? = nil, headers: [String: String] = [:]) -> FlagEndpoint? {
        guard let url = baseURL ?? self.baseURL else { return nil }
        return .ofrep(baseURL: url, headers: Self.merging(headers, over: self.headers))
    }

    /// `over` with `fields` laid on it: a name in both (compared without letter case) keeps
    /// `fields`' spelling and value.
    package static func merging(_ fields: [String: String], over base: [String: String]) -> [String: String] {
        let given = Set(fields.keys.map { $0.lowercased() })
        var merged = base.filter { !given.contains($0.key.lowercased()) }
        merged.merge(fields) { _, new in new }
        return merged
    }

    private static func url(_ text: String?, problems: inout [String]) -> URL? {
        guard let text = text?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty
        else {
            problems.append("OFREP_ENDPOINT is not an absolute http or https URL; it is not used")
            return nil
        }
        return url
    }

    /// ADR-0007's algorithm: percent-decode the whole value, split on commas, split each pair
    /// at its first `=`, trim white space from both sides; a malformed pair is left out.
    private static func headers(_ text: String?, problems: inout [String]) -> [String: String] {
        guard let text, !text.isEmpty else { return [:] }
        guard let decoded = text.removingPercentEncoding else {
            problems.append("OFREP_HEADERS is not valid percent-encoding; no header of it is used")
            return [:]
        }
        var fields: [String: String] = [:]
        for (index, pair) in decoded.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            let place = "OFREP_HEADERS entry \(index + 1)"
            guard let equals = pair.firstIndex(of: "=") else {
                problems.append("\(place) has no '=' between a name and a value; it is not used")
                continue
            }
            let name = pair[..<equals].trimmingCharacters(in: .whitespaces)
            let value = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            if let why = unusable(name: name, value: value) {
                problems.append("\(place)\(why); it is not used")
                continue
            }
            let shown = FlagText.printable(name)
            if let earlier = fields.keys.first(where: { $0.lowercased() == name.lowercased() }) {
                problems.append("\(place) names \(shown) again; the later value is used")
                fields[earlier] = nil
            }
            fields[name] = value
        }
        return fields
    }

    /// Why a header pair cannot be sent, as the end of a sentence about its entry; nil when it
    /// can. Never quotes the value — nor a name that is not a token: that is most often a
    /// credential written the wrong way (`Authorization: Basic dXNlcg==` splits at the padding).
    private static func unusable(name: String, value: String) -> String? {
        if name.isEmpty { return " has no name" }
        guard HeaderFieldCheck.isToken(name) else {
            return ": the text before '=' is not a header name (letters, digits, !#$%&'*+-.^_`|~)"
        }
        let shown = FlagText.printable(name)
        if value.isEmpty { return " (\(shown)) has an empty value" }
        guard HeaderFieldCheck.isFieldValue(value) else { return " (\(shown)): its value holds a line break or another control character" }
        return nil
    }

    private static func timeout(_ text: String?, problems: inout [String]) -> Duration? {
        guard let text = text?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        guard text.allSatisfy(\.isASCIIDigit), let milliseconds = Int64(text), milliseconds > 0 else {
            problems.append("OFREP_TIMEOUT_MS is not a whole number of milliseconds above 0; the default budget is used")
            return nil
        }
        return .milliseconds(milliseconds)
    }
}
