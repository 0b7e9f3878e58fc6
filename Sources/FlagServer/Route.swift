import FeatureFlags

/// What a request asks for.
enum Route {
    case flags(EvaluationContext)
    case failure(status: Int, message: String)

    var context: EvaluationContext? {
        if case .flags(let context) = self { return context }
        return nil
    }

    init(_ request: HTTPRequest, pathAttribute: String) {
        var attributes: [String: FlagValue] = [:]
        var targetingKey: String?
        for (name, value) in request.query {
            if name == "targetingKey" { targetingKey = value } else { attributes[name] = .string(value) }
        }
        if request.path == "/flags" {
            switch request.method {
            case "GET":
                self = .flags(EvaluationContext(targetingKey: targetingKey, attributes: attributes))
            case "POST":
                guard let posted = Self.postedContext(request.body) else {
                    self = .failure(status: 400, message: "the body must be {\"context\": {…}}")
                    return
                }
                let merged = posted.attributes.merging(attributes) { _, query in query }
                self = .flags(EvaluationContext(targetingKey: targetingKey ?? posted.targetingKey, attributes: merged))
            default:
                self = .failure(status: 405, message: "use GET or POST")
            }
            return
        }
        if request.path.hasPrefix("/flags/"), request.path.hasSuffix(".json") {
            guard request.method == "GET" else {
                self = .failure(status: 405, message: "use GET")
                return
            }
            let value = String(request.path.dropFirst("/flags/".count).dropLast(".json".count))
            guard !value.isEmpty, !value.contains("/") else {
                self = .failure(status: 404, message: "no such document")
                return
            }
            attributes[pathAttribute] = .string(value)
            self = .flags(EvaluationContext(targetingKey: targetingKey, attributes: attributes))
            return
        }
        self = .failure(status: 404, message: "no route for \(request.method) \(request.path)")
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
