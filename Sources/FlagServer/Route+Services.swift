import Foundation
import FeatureFlags

extension Route {
    /// The routes that emulate other flag services; nil when the path is none of theirs.
    static func otherService(_ request: HTTPRequest) -> Route? {
        let path = request.path
        if path == "/ofrep/v1/evaluate/flags" { return ofrep(request) }
        if path.hasPrefix(ofrepFlagPrefix), path.count > ofrepFlagPrefix.count { return ofrepFlag(request) }
        if path.hasPrefix("/msdk/evalx/") { return launchDarkly(request) }
        if path == "/meval" || path.hasPrefix("/meval/") { return launchDarklyStream(request) }
        if path.hasPrefix("/v1/projects/"), path.hasSuffix(":fetch") { return firebase(request) }
        if path == "/api/frontend" { return unleash(request) }
        return nil
    }

    /// Where OFREP's single-flag evaluation is served: the key follows (percent-decoded).
    static let ofrepFlagPrefix = "/ofrep/v1/evaluate/flags/"

    /// OFREP's single-flag evaluation: the bulk request's rules, its errors naming the key.
    private static func ofrepFlag(_ request: HTTPRequest) -> Route {
        let key = String(request.path.dropFirst(ofrepFlagPrefix.count))
        switch ofrep(request) {
        case .flags(let context, _):
            return .ofrepFlag(key: key, context)
        case .failure(let status, let message, _):
            let body: [String: FlagValue] = ["key": .string(key), "errorCode": "INVALID_CONTEXT", "errorDetails": .string(message)]
            return .refusal(status: status, body: body, format: .ofrep)
        case let other:
            return other
        }
    }

    private static func ofrep(_ request: HTTPRequest) -> Route {
        guard request.method == "POST" else { return .methodNotAllowed(allow: "POST", format: .ofrep) }
        guard let value = try? FlagJSON.parse(request.body), case .object(let top) = value else {
            return .failure(status: 400, message: "the body must be a JSON object with a context", format: .ofrep)
        }
        // OFREP's request schemas require the context.
        guard let member = top["context"] else { return .failure(status: 400, message: "the body has no context", format: .ofrep) }
        guard let context = EvaluationContext(flagValue: member) else {
            return .failure(status: 400, message: "context must be an object", format: .ofrep)
        }
        return .flags(context, .ofrep)
    }

    private static func launchDarkly(_ request: HTTPRequest) -> Route {
        let format = WireFormat.launchDarkly(withReasons: request.query["withReasons"] == "true")
        return launchDarklyContext(
            request, pathPrefix: "/msdk/evalx/contexts/", reportPath: "/msdk/evalx/context", format: format,
            wrongRoute: .failure(status: 404, message: "no route for \(request.method) \(request.path)", format: format)
        ) { .flags($0, format) }
    }

    /// LaunchDarkly's mobile stream: the context in the path (`GET /meval/<base64url>`) or in
    /// the body (`REPORT /meval`).
    private static func launchDarklyStream(_ request: HTTPRequest) -> Route {
        let reasons = request.query["withReasons"] == "true"
        return launchDarklyContext(
            request, pathPrefix: "/meval/", reportPath: "/meval", format: .launchDarkly(withReasons: reasons),
            wrongRoute: .methodNotAllowed(allow: "GET, HEAD, REPORT", format: .launchDarkly(withReasons: reasons))
        ) { .launchDarklyStream($0, withReasons: reasons) }
    }

    /// The context of a LaunchDarkly request — base64url after `pathPrefix` in a `GET`, the body
    /// of a `REPORT` to `reportPath` — as `route` makes it; `wrongRoute` for another method or
    /// path, a failure in `format` for a context that cannot be read.
    private static func launchDarklyContext(
        _ request: HTTPRequest, pathPrefix: String, reportPath: String, format: WireFormat, wrongRoute: Route,
        route: (EvaluationContext) -> Route
    ) -> Route {
        let json: [UInt8]
        switch (request.method, request.path) {
        case ("GET", let path) where path.hasPrefix(pathPrefix):
            // Base64url, with or without padding.
            var encoded = Array(path.dropFirst(pathPrefix.count).utf8)
            while encoded.last == UInt8(ascii: "=") { encoded.removeLast() }
            guard let bytes = Base64URL.decode(encoded) else {
                return .failure(status: 400, message: "the context is not base64url", format: format)
            }
            json = bytes
        case ("REPORT", reportPath):
            json = request.body
        default:
            return wrongRoute
        }
        guard let value = try? FlagJSON.parse(json), case .object(var members) = value, let key = members["key"]?.stringValue else {
            return .failure(status: 400, message: "the context must be a JSON object with a key", format: format)
        }
        let anonymous = members["anonymous"] == .bool(true)
        for name in ["key", "kind", "anonymous", "_meta"] { members[name] = nil }
        return route(EvaluationContext(targetingKey: anonymous ? nil : key, attributes: members))
    }

    private static func firebase(_ request: HTTPRequest) -> Route {
        guard request.method == "POST" else { return .methodNotAllowed(allow: "POST", format: .firebase) }
        guard let value = try? FlagJSON.parse(request.body), case .object(let top) = value,
            top["appInstanceId"]?.stringValue != nil, top["appId"]?.stringValue != nil
        else {
            return .failure(status: 400, message: "appId and appInstanceId are required", format: .firebase)
        }
        let properties = top["analyticsUserProperties"]?.objectValue ?? [:]
        return .flags(EvaluationContext(targetingKey: nil, attributes: properties), .firebase)
    }

    private static func unleash(_ request: HTTPRequest) -> Route {
        guard request.method == "GET" else { return .methodNotAllowed(allow: "GET, HEAD", format: .unleash) }
        var attributes: [String: FlagValue] = [:]
        var targetingKey: String?
        for (name, value) in request.query {
            if name == "userId" {
                targetingKey = value
            } else if name.hasPrefix("properties["), name.hasSuffix("]") {
                attributes[String(name.dropFirst("properties[".count).dropLast())] = .string(value)
            } else {
                attributes[name] = .string(value)
            }
        }
        // appName and environment describe the caller, not the user: not targeting attributes.
        attributes["appName"] = nil
        attributes["environment"] = nil
        return .flags(EvaluationContext(targetingKey: targetingKey, attributes: attributes), .unleash)
    }
}
