import FeatureFlags
import FeatureFlagsFlagd
import FeatureFlagsServices
import Foundation

/// The `--provider` names `flagctl eval` understands, and the endpoint each makes.
enum EndpointChoice {
    static let names = ["json", "ofrep", "launchdarkly", "firebase", "unleash", "flagd"]

    /// What a provider may need beyond the endpoint URL.
    struct Credentials {
        var key: String?
        var project: String?
        var appID: String?
        var appName: String?
        /// LaunchDarkly's stream base URL (`--stream-endpoint`).
        var streamURL: String?
        /// How `json` asks (`--method get|post`); nil: GET for a URL template, else POST.
        var method: String?
    }

    /// The endpoint `name` for `url`. For `json`, a URL with `{placeholders}` is a GET template
    /// (a CDN), `--method get` GETs a static document, any other URL receives the context by POST; for `flagd` it is the definitions
    /// file's URL; for the others `url` is the service's base URL.
    static func make(
        _ name: String, url: String, credentials: Credentials = Credentials(), bucketing: FractionalBucketing? = nil
    ) throws(UsageError) -> FlagEndpoint {
        if bucketing != nil, name != "flagd" {
            throw UsageError(message: "--bucketing applies to rules evaluated here: --provider flagd")
        }
        func require(_ value: String?, _ option: String, _ what: String) throws(UsageError) -> String {
            guard let value, !value.isEmpty else { throw UsageError(message: "--provider \(name) needs --\(option) (\(what))") }
            return value
        }
        if credentials.method != nil, name != "json" {
            throw UsageError(message: "--method applies to --provider json (the others ask as their service expects)")
        }
        switch name {
        case "json":
            switch credentials.method {
            case nil, "get", "post": break
            default: throw UsageError(message: "--method takes get or post, not '\(Formatting.printable(credentials.method ?? ""))'")
            }
            if url.contains("{") {
                if credentials.method == "post" {
                    throw UsageError(message: "--method post cannot fill {placeholders}: a URL template is fetched by GET")
                }
                _ = try Formatting.url(url.replacingOccurrences(of: "{", with: "").replacingOccurrences(of: "}", with: ""), option: "endpoint")
                return .json(urlTemplate: url)
            }
            let endpoint = try Formatting.url(url, option: "endpoint")
            return credentials.method == "get" ? .json(get: endpoint) : .json(post: endpoint)
        case "ofrep":
            return .ofrep(baseURL: try Formatting.url(url, option: "endpoint"))
        case "launchdarkly":
            // The stream: --stream-endpoint, else LaunchDarkly's own stream host beside its
            // polling host, else the polling URL's server (flagctl serve speaks both).
            let base = try Formatting.url(url, option: "endpoint")
            let stream = try credentials.streamURL.map { text throws(UsageError) in try Formatting.url(text, option: "stream-endpoint") }
                ?? (base.host == LaunchDarklyEndpoint.defaultBaseURL.host ? LaunchDarklyEndpoint.defaultStreamBaseURL : base)
            return .launchDarkly(mobileKey: try require(credentials.key, "key", "the mobile key"), baseURL: base, streamBaseURL: stream)
        case "firebase":
            return .firebaseRemoteConfig(
                projectID: try require(credentials.project, "project", "the project number"),
                apiKey: try require(credentials.key, "key", "the API key"),
                appID: try require(credentials.appID, "app-id", "the app id, 1:…:ios:…"), appInstanceID: "flagctl",
                baseURL: try Formatting.url(url, option: "endpoint"))
        case "flagd":
            // A flagd definitions file, fetched and evaluated here (flagctl serve FILE serves one
            // at /flagd/flags.json).
            return .flagd(url: try Formatting.url(url, option: "endpoint"), bucketing: bucketing ?? .highPrecision)
        case "unleash":
            return .unleash(
                baseURL: try Formatting.url(url, option: "endpoint"), clientKey: try require(credentials.key, "key", "the frontend key"),
                appName: credentials.appName)
        default:
            let hint = ArgumentParser.suggestion(for: name, among: names).map { " (did you mean \($0)?)" } ?? ""
            throw UsageError(message: "unknown provider '\(name)'\(hint); choose one of: \(names.joined(separator: ", "))")
        }
    }
}

extension EndpointChoice {
    /// The `--bucketing` words: `string` (flagd's current high-precision hashing of strings, the
    /// default), `cbor` (the accepted ADR: any value, hashed as deterministic CBOR) and
    /// `legacy-percent` (flagd's earlier float bucketing).
    static let bucketingNames = ["string", "cbor", "legacy-percent"]

    /// The endpoints `--endpoint` gives (once, or more for a set of services named by host and port) and the
    /// `--strategy` that combines them.
    static func services(
        _ arguments: ParsedArguments, format: String, url first: String, credentials: Credentials,
        bucketing: FractionalBucketing? = nil
    ) throws(UsageError) -> (endpoints: [FlagEndpoint], strategy: ServiceStrategy) {
        let urls = arguments.all("endpoint").count > 1 ? arguments.all("endpoint") : [first]
        var endpoints: [FlagEndpoint] = []
        for url in urls {
            let endpoint = try make(format, url: url, credentials: credentials, bucketing: bucketing)
            let host = URL(string: url).flatMap { url in url.host.map { host in url.port.map { "\(host):\($0)" } ?? host } }
            endpoints.append(urls.count > 1 ? endpoint.named(host ?? endpoint.name) : endpoint)
        }
        return (endpoints, try strategy(arguments.value("strategy"), endpoints: endpoints.count))
    }

    /// The strategy `--strategy` names (default `chain`); a strategy needs more than one endpoint.
    static func strategy(_ text: String?, endpoints: Int) throws(UsageError) -> ServiceStrategy {
        let strategies: [ServiceStrategy] = [.chain, .firstMatch, .firstSuccessful, .comparison(answering: 0)]
        guard let strategy = strategies.first(where: { $0.name == text ?? "chain" }) else {
            throw UsageError(
                message: "--strategy takes \(strategies.dropLast().map(\.name).joined(separator: ", ")) or \(strategies.last!.name), not '\(Formatting.printable(text ?? ""))'")
        }
        if strategy != .chain, endpoints < 2 {
            throw UsageError(message: "--strategy combines several services: give --endpoint more than once")
        }
        return strategy
    }

    /// The bucketing `--bucketing` names; nil when it is not given.
    static func bucketing(_ text: String?) throws(UsageError) -> FractionalBucketing? {
        switch text {
        case nil: return nil
        case "string", "high-precision": return .highPrecision
        case "cbor": return .cbor
        case "legacy-percent": return .legacyPercent
        default:
            throw UsageError(message: "--bucketing takes \(bucketingNames.joined(separator: ", ")), not '\(Formatting.printable(text ?? ""))'")
        }
    }
}

extension EndpointChoice {
    /// What a fetching command connects with: the endpoint URL, the header fields and the fetch
    /// budget given as options — and for `--provider ofrep`, OFREP's environment variables
    /// beneath them (OFREP ADR-0007): `OFREP_ENDPOINT` when there is no `--endpoint`,
    /// `OFREP_HEADERS` under `--header` (a field both name is the option's), `OFREP_TIMEOUT_MS`
    /// when there is no `--timeout`. What a variable holds that cannot be used is printed as a
    /// warning on standard error, and the command goes on without it.
    static func connection(
        _ arguments: ParsedArguments, provider: String, command: String, console: Console
    ) throws(UsageError) -> (url: String, headers: [String: String], budget: Duration) {
        let given = try arguments.headers()
        var budget = try arguments.fetchBudget()
        guard provider == "ofrep" else {
            guard let url = arguments.value("endpoint") else {
                throw UsageError(message: "--endpoint is required: flagctl \(command) --endpoint URL")
            }
            return (url, given, budget)
        }
        let settings = OFREPEnvironment(arguments.environment)
        for problem in settings.problems { console.err("flagctl \(command): warning: \(problem)") }
        guard let url = arguments.value("endpoint") ?? settings.baseURL?.absoluteString else {
            throw UsageError(message: "--endpoint is required, or OFREP_ENDPOINT: flagctl \(command) --provider ofrep --endpoint URL")
        }
        if arguments.value("timeout") == nil, let timeout = settings.timeout {
            let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) * 1e-18
            if (CommandSpec.Option.minimumTimeout...CommandSpec.Option.maximumTimeout).contains(seconds) {
                budget = timeout
            } else {
                console.err(
                    "flagctl \(command): warning: OFREP_TIMEOUT_MS is not \(CommandSpec.Option.acceptedTimeouts) seconds; the default budget is used")
            }
        }
        return (url, OFREPEnvironment.merging(given, over: settings.headers), budget)
    }
}
