public import FeatureFlags

/// The flag services FlagServer speaks, each rendering the same evaluated document in its
/// own wire format, so every endpoint of the client is tested against one source of truth.
public enum WireFormat: Sendable, Hashable {
    /// FeatureFlags' own document (`POST /flags`, `GET /flags/<venue>.json`, `GET /flags?…`).
    case json
    /// OFREP bulk evaluation (`POST /ofrep/v1/evaluate/flags`).
    case ofrep
    /// LaunchDarkly client-side polling (`GET /msdk/evalx/contexts/<base64url>`, `REPORT /msdk/evalx/context`).
    case launchDarkly(withReasons: Bool)
    /// Firebase Remote Config fetch (`POST /v1/projects/<p>/namespaces/<ns>:fetch`).
    case firebase
    /// Unleash frontend API (`GET /api/frontend`).
    case unleash

    /// The body this service would answer for `document` (already evaluated for one context).
    /// `eventStreams`, when given, is added to the formats that can advertise change streams
    /// (OFREP and the project's JSON document) as their `eventStreams` member.
    package func render(_ document: FlagDocument, eventStreams: FlagValue? = nil) -> [UInt8] {
        switch self {
        case .json:
            guard let eventStreams, case .object(var top) = document.flagValue else { return document.jsonBytes() }
            top["eventStreams"] = eventStreams
            return FlagJSON.bytes(.object(top), sortedKeys: true)
        case .ofrep:
            guard let eventStreams, case .object(var top) = ofrep(document) else { return FlagJSON.bytes(ofrep(document), sortedKeys: true) }
            top["eventStreams"] = eventStreams
            return FlagJSON.bytes(.object(top), sortedKeys: true)
        case .launchDarkly(let reasons): return FlagJSON.bytes(launchDarkly(document, reasons: reasons), sortedKeys: true)
        case .firebase: return FlagJSON.bytes(firebase(document), sortedKeys: true)
        case .unleash: return FlagJSON.bytes(unleash(document), sortedKeys: true)
        }
    }

    /// The advertisement of the server's own change stream: `GET /events` on the origin the
    /// client asked, left to the client to resolve (no host name to get wrong behind a proxy).
    public static let ownEventStream: FlagValue = [["type": "sse", "endpoint": ["requestUri": "/events"], "inactivityDelaySec": 120]]

    /// The body of an error answer in this format.
    func errorBody(status: Int, message: String) -> FlagValue {
        switch self {
        case .ofrep:
            let code = status == 400 ? "INVALID_CONTEXT" : "GENERAL"
            return status == 400 ? ["errorCode": .string(code), "errorDetails": .string(message)] : ["errorDetails": .string(message)]
        case .firebase:
            let statuses = [400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 429: "RESOURCE_EXHAUSTED"]
            return ["error": ["code": .int(status), "status": .string(statuses[status] ?? "INTERNAL"), "message": .string(message)]]
        default:
            return ["error": .string(message)]
        }
    }

    private func sortedEntries(_ document: FlagDocument) -> [(String, FlagEntry)] {
        document.flags.sorted { $0.key < $1.key }
    }

    /// The bulk answer: every flag, and the document's version as the flag set's metadata.
    private func ofrep(_ document: FlagDocument) -> FlagValue {
        var top: [String: FlagValue] = ["flags": .list(sortedEntries(document).map { .object(Self.ofrepItem(key: $0, entry: $1)) })]
        if let version = document.version { top["metadata"] = ["version": .string(version)] }
        return .object(top)
    }

    /// One flag as OFREP evaluates it: `{key, value?, reason?, variant?, metadata?}`, or
    /// `{key, errorCode}` for a flag whose evaluation failed.
    static func ofrepItem(key: String, entry: FlagEntry) -> [String: FlagValue] {
        var item: [String: FlagValue] = ["key": .string(key)]
        if let code = entry.errorCode {
            item["errorCode"] = .string(code.rawValue)
            return item
        }
        if let value = entry.value { item["value"] = value }
        if let reason = entry.reason { item["reason"] = .string(reason.rawValue) }
        if let variant = entry.variant { item["variant"] = .string(variant) }
        if !entry.metadata.isEmpty { item["metadata"] = .object(entry.metadata) }
        return item
    }

    /// LaunchDarkly's flag objects for `document` (the polling answer's members), each with
    /// `version` as its environment version (which a stream's `patch` and `delete` compare).
    package static func launchDarklyFlags(_ document: FlagDocument, reasons: Bool, version: Int) -> [String: FlagValue] {
        guard case .object(var flags) = WireFormat.launchDarkly(withReasons: reasons).launchDarkly(document, reasons: reasons) else { return [:] }
        for (key, flag) in flags {
            guard case .object(var item) = flag else { continue }
            item["version"] = .int(version)
            flags[key] = .object(item)
        }
        return flags
    }

    private func launchDarkly(_ document: FlagDocument, reasons: Bool) -> FlagValue {
        var flags: [String: FlagValue] = [:]
        for (key, entry) in sortedEntries(document) {
            var item: [String: FlagValue] = ["value": entry.value ?? .null, "version": 1, "flagVersion": 1]
            let targeted = entry.reason == .targetingMatch
            item["variation"] = .int(targeted ? 1 : 0)
            if reasons {
                if let code = entry.errorCode {
                    let kinds: [FlagErrorCode: String] = [
                        .flagNotFound: "FLAG_NOT_FOUND", .parseError: "MALFORMED_FLAG", .typeMismatch: "WRONG_TYPE",
                        .targetingKeyMissing: "USER_NOT_SPECIFIED",
                    ]
                    item["reason"] = ["kind": "ERROR", "errorKind": .string(kinds[code] ?? "EXCEPTION")]
                } else if entry.reason == .disabled {
                    item["reason"] = ["kind": "OFF"]
                } else if targeted {
                    item["reason"] = ["kind": "RULE_MATCH", "ruleIndex": 0, "ruleId": .string(entry.variant ?? "rule")]
                } else {
                    item["reason"] = ["kind": "FALLTHROUGH"]
                }
            }
            flags[key] = .object(item)
        }
        return .object(flags)
    }

    private func firebase(_ document: FlagDocument) -> FlagValue {
        var entries: [String: FlagValue] = [:]
        for (key, entry) in sortedEntries(document) {
            guard let value = entry.value else { continue }
            if case .string(let text) = value {
                entries[key] = .string(text)
            } else {
                entries[key] = .string(FlagJSON.string(value, sortedKeys: true))
            }
        }
        var top: [String: FlagValue] = ["state": entries.isEmpty ? "EMPTY_CONFIG" : "UPDATE"]
        if !entries.isEmpty { top["entries"] = .object(entries) }
        if let version = document.version { top["templateVersion"] = .string(version) }
        return .object(top)
    }

    private func unleash(_ document: FlagDocument) -> FlagValue {
        var toggles: [FlagValue] = []
        for (key, entry) in sortedEntries(document) {
            guard let value = entry.value, value != .bool(false) else { continue }
            var variant: [String: FlagValue] = ["name": .string(entry.variant ?? "disabled"), "enabled": .bool(entry.variant != nil)]
            if value != .bool(true) {
                let (type, text): (String, String)
                switch value {
                case .string(let s): (type, text) = ("string", s)
                case .int, .double: (type, text) = ("number", FlagJSON.string(value))
                default: (type, text) = ("json", FlagJSON.string(value, sortedKeys: true))
                }
                variant = ["name": .string(entry.variant ?? "default"), "enabled": true, "payload": ["type": .string(type), "value": .string(text)]]
            }
            toggles.append(["name": .string(key), "enabled": true, "variant": .object(variant), "impressionData": false])
        }
        return ["toggles": .list(toggles)]
    }
}
