package import FeatureFlags
package import Foundation

/// LaunchDarkly's client-side (mobile) polling: every flag evaluated for one context.
///
/// - Request: `GET {base}/msdk/evalx/contexts/{base64url(context JSON)}` or
///   `REPORT {base}/msdk/evalx/context` with the context as the body; `?withReasons=true`;
///   `Authorization: api_key {mobile key}`; `If-None-Match` with the stored ETag.
/// - The context is a single-kind LaunchDarkly context: `{"kind": "user", "key": targetingKey,
///   …attributes}` (an anonymous context without a targeting key uses the fingerprint as key).
/// - 200: `{flagKey: {value, variation, version, flagVersion, reason: {kind, errorKind?}}}`:
///   `variation` becomes the variant, reasons map to OpenFeature's (below), versions go into
///   metadata, a `null` value means the code default.
/// - Streaming (on by default): `GET {streamBase}/meval/{base64url(context JSON)}` (or `REPORT
///   {streamBase}/meval` with the context as the body), `?withReasons=true`, the same
///   `Authorization`. Its server-sent events: `put` (every flag, the polling answer's shape)
///   replaces all values, `patch` (one flag with its `key` and `version`) and `delete` (`key`
///   and `version`) change one flag unless the version held is as new or newer, `ping` asks for
///   a fetch through the polling endpoint; other events are ignored. The provider opens it only
///   in the foreground and while ``FeatureFlagProvider/run()`` runs, and applies what it brings
///   exactly as a fetched answer (schema, kill switch, persistence). See Docs/Providers.md.
package struct LaunchDarklyEndpoint: StreamingEndpoint {
    /// How the context travels.
    package enum Method: Sendable {
        /// In the URL path, base64url-encoded (the default).
        case get
        /// In the body of a REPORT request (for contexts too large for a URL).
        case report
    }

    private let mobileKey: String
    private var baseURL: URL { baseURLReference.url }
    // Held by reference: a stored `URL` has no fixed layout on Apple platforms (FixedLayout.swift).
    private let baseURLReference: URLReference
    private var streamBaseURL: URL? { streamBaseURLReference?.url }
    // Held by reference: a stored `URL` has no fixed layout on Apple platforms (FixedLayout.swift).
    private let streamBaseURLReference: URLReference?
    private let method: Method
    private let withReasons: Bool

    /// `"launchdarkly"`.
    package var name: String { "launchdarkly" }

    /// The default polling host.
    package static let defaultBaseURL = URL(string: "https://clientsdk.launchdarkly.com") ?? URL(fileURLWithPath: "/")

    /// The default streaming host (LaunchDarkly's client stream service).
    package static let defaultStreamBaseURL = URL(string: "https://clientstream.launchdarkly.com") ?? URL(fileURLWithPath: "/")

    /// How long LaunchDarkly's stream may stay silent before the connection counts as
    /// half-open: LaunchDarkly's own mobile SDK waits 5 minutes (its heartbeat comments come
    /// more often).
    package static let streamHeartbeatDeadline = Duration.seconds(300)

    /// An endpoint using `mobileKey`, polling `baseURL` and streaming from `streamBaseURL`
    /// (nil: no stream — changes come with polls only).
    package init(
        mobileKey: String, baseURL: URL = LaunchDarklyEndpoint.defaultBaseURL,
        streamBaseURL: URL? = LaunchDarklyEndpoint.defaultStreamBaseURL, method: Method = .get, withReasons: Bool = true
    ) {
        self.mobileKey = mobileKey
        self.baseURLReference = URLReference(baseURL)
        self.streamBaseURLReference = streamBaseURL.map(URLReference.init)
        self.method = method
        self.withReasons = withReasons
    }

    /// The stream for `context` (nil without a stream base URL).
    package func streamLink(for context: EvaluationContext) -> EventStreamLink? {
        guard let streamBaseURL else { return nil }
        let json = FlagJSON.bytes(Self.contextJSON(context), sortedKeys: true)
        let query = withReasons ? [("withReasons", "true")] : []
        var headers = ["Authorization": "api_key \(mobileKey)"]
        let url: URL?
        let body: [UInt8]?
        switch method {
        case .get:
            url = try? EndpointSupport.url(streamBaseURL, appending: ["meval", Base64URL.encode(json)], query: query)
            body = nil
        case .report:
            url = try? EndpointSupport.url(streamBaseURL, appending: ["meval"], query: query)
            headers["Content-Type"] = "application/json"
            body = json
        }
        guard let url else { return nil }
        let connection = StreamConnection(
            method: method == .get ? "GET" : "REPORT", headers: headers, body: body, events: .launchDarkly,
            heartbeatDeadline: Self.streamHeartbeatDeadline)
        return EventStreamLink(url: url, inactivityDelay: EventStreamLink.defaultInactivityDelay, endpoint: nil, sameOrigin: false, connection: connection)
    }

    /// The LaunchDarkly context for `context`.
    package static func contextJSON(_ context: EvaluationContext) -> FlagValue {
        var members = context.attributes.filter { !["kind", "key", "anonymous", "_meta"].contains($0.key) }
        members["kind"] = "user"
        if let key = context.targetingKey {
            members["key"] = .string(key)
        } else {
            members["key"] = .string(context.fingerprint)
            members["anonymous"] = true
        }
        return .object(members)
    }

    /// The polling request.
    package func request(for context: EvaluationContext, etag: String?) throws(FlagError) -> FlagRequest {
        var headers = ["Authorization": "api_key \(mobileKey)", "Accept": "application/json"]
        if let etag { headers["If-None-Match"] = etag }
        let json = FlagJSON.bytes(Self.contextJSON(context), sortedKeys: true)
        let query = withReasons ? [("withReasons", "true")] : []
        switch method {
        case .get:
            let url = try EndpointSupport.url(
                baseURL, appending: ["msdk", "evalx", "contexts", Base64URL.encode(json)], query: query)
            return FlagRequest(url: url, method: "GET", headers: headers)
        case .report:
            headers["Content-Type"] = "application/json"
            let url = try EndpointSupport.url(baseURL, appending: ["msdk", "evalx", "context"], query: query)
            return FlagRequest(url: url, method: "REPORT", headers: headers, body: json)
        }
    }

    /// Reads the flag map.
    package func decode(_ response: FlagResponse, for context: EvaluationContext) throws(FlagError) -> DecodedFlags {
        try decode(streamed: EndpointSupport.object(response.body, service: "LaunchDarkly"), for: context)
    }

    /// Reads a flag map, from a polling answer or a stream (the same shape); the answer
    /// carries the context's stream.
    package func decode(streamed top: [String: FlagValue], for context: EvaluationContext) throws(FlagError) -> DecodedFlags {
        var flags: [String: FlagEntry] = [:]
        flags.reserveCapacity(top.count)
        for (key, item) in top {
            guard case .object(let o) = item else {
                throw FlagError(.parseError, "LaunchDarkly: flag \"\(key)\" is \(item.typeNameWithArticle), expected an object")
            }
            var metadata: [String: FlagValue] = [:]
            for name in ["version", "flagVersion", "trackEvents", "trackReason", "debugEventsUntilDate"] where o[name] != nil {
                metadata[name] = o[name]
            }
            let variation = o["variation"]?.intValue
            var reason: FlagReason?
            var errorCode: FlagErrorCode?
            if case .object(let r)? = o["reason"] {
                let kind = r["kind"]?.stringValue ?? ""
                metadata["reasonKind"] = .string(kind)
                (reason, errorCode) = Self.map(kind: kind, errorKind: r["errorKind"]?.stringValue)
            }
            let value: FlagValue? = o["value"] == .null ? nil : o["value"]
            flags[key] = FlagEntry(
                value: value, variant: variation.map(String.init), reason: reason, errorCode: errorCode, metadata: metadata)
        }
        return .flags(flags, streams: streamLink(for: context).map { [$0] } ?? [])
    }

    /// LaunchDarkly reason kinds in OpenFeature's words.
    package static func map(kind: String, errorKind: String?) -> (FlagReason, FlagErrorCode?) {
        switch kind {
        case "OFF": return (.disabled, nil)
        case "FALLTHROUGH": return (.default, nil)
        case "TARGET_MATCH", "RULE_MATCH": return (.targetingMatch, nil)
        case "PREREQUISITE_FAILED": return (.default, nil)
        case "ERROR":
            let code: FlagErrorCode
            switch errorKind {
            case "FLAG_NOT_FOUND": code = .flagNotFound
            case "MALFORMED_FLAG": code = .parseError
            case "USER_NOT_SPECIFIED": code = .targetingKeyMissing
            case "WRONG_TYPE": code = .typeMismatch
            case "CLIENT_NOT_READY": code = .providerNotReady
            default: code = .general
            }
            return (.error, code)
        default: return (FlagReason(rawValue: kind.isEmpty ? "UNKNOWN" : kind), nil)
        }
    }
}
