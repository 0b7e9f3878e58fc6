import FeatureFlags

/// What a request asks for.
enum Route {
    case flags(EvaluationContext, WireFormat)
    case failure(status: Int, message: String, format: WireFormat)
    /// 405: the path exists, not for this method; `allow` lists the methods it takes (the
    /// `Allow` header field a 405 must carry, RFC 9110 §15.5.6).
    case methodNotAllowed(allow: String, format: WireFormat)
    /// `GET /events`: the change stream (server-sent events), one for every wire format.
    case events
    /// `GET /meval/<base64url>` or `REPORT /meval`: LaunchDarkly's mobile stream for a context.
    case launchDarklyStream(EvaluationContext, withReasons: Bool)
    /// `GET /flagd/flags.json`: the flagd flag-definition document, for evaluation on the device.
    case flagd
    /// `POST /ofrep/v1/evaluate/flags/<key>`: OFREP's single-flag evaluation.
    case ofrepFlag(key: String, EvaluationContext)
    /// `OPTIONS *`: what the server as a whole takes (RFC 9110 §9.3.7).
    case serverOptions
    /// An answer decided by the route alone, with a body of its own (a service's error shape
    /// that `failure` cannot say, e.g. OFREP's single-flag `{key, errorCode, errorDetails}`).
    case refusal(status: Int, body: [String: FlagValue], format: WireFormat)

    /// Whether the route serves flags (or their rules or streams): the server's required
    /// header fields, when it has any, are checked first.
    var needsCredentials: Bool {
        switch self {
        case .flags, .ofrepFlag, .flagd, .launchDarklyStream: return true
        case .events, .failure, .refusal, .methodNotAllowed, .serverOptions: return false
        }
    }

    var context: EvaluationContext? {
        if case .flags(let context, _) = self { return context }
        if case .ofrepFlag(_, let context) = self { return context }
        return nil
    }

    var format: WireFormat {
        switch self {
        case .flags(_, let format), .failure(_, _, let format), .methodNotAllowed(_, let format), .refusal(_, _, let format): return format
        case .events, .flagd, .serverOptions: return .json
        case .ofrepFlag: return .ofrep
        case .launchDarklyStream(_, let reasons): return .launchDarkly(withReasons: reasons)
        }
    }

    /// The request's route without any value it carries — `GET /flags/<venue>.json`,
    /// `POST ofrep` — for logs: paths hold attribute values (a URL template's venue or e-mail,
    /// LaunchDarkly's base64 context), so logs name the route and the context's fingerprint only.
    static func label(_ request: HTTPRequest, format: WireFormat, pathAttribute: String) -> String {
        let method = request.method.count <= 12 ? request.method : String(request.method.prefix(12)) + "…"
        switch format {
        case .json:
            if request.path == "*" { return "\(method) *" }
            if request.path == "/flags" { return "\(method) /flags" }
            if request.path == "/events" { return "\(method) /events" }
            if request.path == Self.flagdPath { return "\(method) \(Self.flagdPath)" }
            if request.path.hasPrefix("/flags/"), request.path.hasSuffix(".json") { return "\(method) /flags/<\(pathAttribute)>.json" }
            return "\(method) <unknown path>"
        case .ofrep: return "\(method) ofrep"
        case .launchDarkly: return "\(method) launchdarkly"
        case .firebase: return "\(method) firebase"
        case .unleash: return "\(method) unleash"
        }
    }

    /// The methods of RFC 9110 §9.3 and PATCH and REPORT; any other is 501 (§9.1), not 405.
    static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "REPORT"]
    /// The methods some path of the server takes: `OPTIONS *`'s `Allow`.
    static let serverMethods = "GET, HEAD, POST, REPORT, OPTIONS"


    init(_ request: HTTPRequest, pathAttribute: String) {
        guard Self.knownMethods.contains(request.method) else {
            self = .failure(status: 501, message: "method \(request.method.prefix(12)) not implemented", format: .json)
            return
        }
        if request.path == "*" {
            self = .serverOptions  // the head parser admits `*` for OPTIONS only
            return
        }
        if request.path == "/events" {
            self = request.method == "GET" ? .events : .methodNotAllowed(allow: "GET, HEAD", format: .json)
            return
        }
        if request.path == Self.flagdPath {
            self = request.method == "GET" ? .flagd : .methodNotAllowed(allow: "GET, HEAD", format: .json)
            return
        }
        if let route = Self.otherService(request) {
            self = route
            return
        }
        self = Self.json(request, pathAttribute: pathAttribute)
    }

    /// The query parameters a refetch after a change-stream event carries (OFREP ADR-0008):
    /// they say which configuration the event announced, not who asks — never attributes.
    static let refetchParameters: Set<String> = [RefetchHint.etagParameter, RefetchHint.lastModifiedParameter]

    /// Where a flagd document is served.
    static let flagdPath = "/flagd/flags.json"

    /// The routes of FeatureFlags' own JSON endpoint.
    private static func json(_ request: HTTPRequest, pathAttribute: String) -> Route {
        var attributes: [String: FlagValue] = [:]
        var targetingKey: String?
        for (name, value) in request.query where !Self.refetchParameters.contains(name) {
            if name == "targetingKey" { targetingKey = value } else { attributes[name] = .string(value) }
        }
        if request.path == "/flags" {
            switch request.method {
            case "GET":
                return .flags(EvaluationContext(targetingKey: targetingKey, attributes: attributes), .json)
            case "POST":
                guard let posted = Self.postedContext(request.body) else {
                    return .failure(status: 400, message: "the body must be {\"context\": {…}}", format: .json)
                }
                let merged = posted.attributes.merging(attributes) { _, query in query }
                return .flags(EvaluationContext(targetingKey: targetingKey ?? posted.targetingKey, attributes: merged), .json)
            default:
                return .methodNotAllowed(allow: "GET, HEAD, POST", format: .json)
            }
        }
        if request.path.hasPrefix("/flags/"), request.path.hasSuffix(".json") {
            guard request.method == "GET" else {
                return .methodNotAllowed(allow: "GET, HEAD", format: .json)
            }
            let value = String(request.path.dropFirst("/flags/".count).dropLast(".json".count))
            guard !value.isEmpty, !value.contains("/") else {
                return .failure(status: 404, message: "no such document", format: .json)
            }
            attributes[pathAttribute] = .string(value)
            return .flags(EvaluationContext(targetingKey: targetingKey, attributes: attributes), .json)
        }
        return .failure(status: 404, message: "no route for \(request.method) \(request.path)", format: .json)
    }

    /// The context in a `{"context": {…}}` body; an empty body is the anonymous context.
    private static func postedContext(_ body: [UInt8]) -> EvaluationContext? {
        if body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return .anonymous }
        guard let value = try? FlagJSON.parse(body), case .object(let top) = value else { return nil }
        switch top["context"] {
        case nil: return .anonymous
        case let context?: return EvaluationContext(flagValue: context)
        }
    }
}
