package import FeatureFlags
package import Foundation

/// Unleash's frontend API (also served by Unleash Edge and the proxy): the enabled toggles for
/// one context.
///
/// - Request: `GET {base}/api/frontend?userId=…&sessionId=…&properties[name]=value…` with
///   `Authorization: {frontend or client key}`; the targeting key is `userId`; `sessionId`,
///   `remoteAddress`, `environment`, `appName` and `currentTime` attributes go as themselves,
///   every other scalar attribute as `properties[name]`.
/// - 200: `{"toggles": [{name, enabled, variant: {name, enabled, payload?: {type, value}}, impressionData}]}`.
///   Each toggle becomes two flags: `name` (Bool: enabled; the variant's name as the variant)
///   and, when the variant carries a payload, `name.payload` — the payload's text, typed by the
///   `FlagKey` that reads it (JSON payloads decode into structs, numbers into Int or Double).
///   Disabled toggles are absent from the answer, so the snapshot's missing flags are off
///   (``FlagSnapshot/missingFlagsAreOff``): a toggle the answer lacks reads `false` with reason
///   `DISABLED` whatever the key's default, as Unleash's own SDKs read it (`isEnabled` is
///   false), and a payload key of a disabled toggle reads its default.
package struct UnleashEndpoint: EndpointFormat {
    private var baseURL: URL { baseURLReference.url }
    // Held by reference: a stored `URL` has no fixed layout on Apple platforms (FixedLayout.swift).
    private let baseURLReference: URLReference
    private let clientKey: String
    private let appName: String?
    private let environment: String?

    /// `"unleash"`.
    package var name: String { "unleash" }

    /// Context fields Unleash knows by name; other attributes become `properties[…]`.
    static let standardFields: Set<String> = ["sessionId", "remoteAddress", "environment", "appName", "currentTime"]

    /// An endpoint for the Unleash instance at `baseURL` (the part before `/api/frontend`).
    package init(baseURL: URL, clientKey: String, appName: String? = nil, environment: String? = nil) {
        self.baseURLReference = URLReference(baseURL)
        self.clientKey = clientKey
        self.appName = appName
        self.environment = environment
    }

    /// `GET …/api/frontend?…`.
    package func request(for context: EvaluationContext, etag: String?) throws(FlagError) -> FlagRequest {
        var headers = ["Authorization": clientKey, "Accept": "application/json"]
        if let appName { headers["UNLEASH-APPNAME"] = appName }
        if let etag { headers["If-None-Match"] = etag }
        var query: [(String, String)] = []
        if let key = context.targetingKey { query.append(("userId", key)) }
        if let appName, context["appName"] == nil { query.append(("appName", appName)) }
        if let environment, context["environment"] == nil { query.append(("environment", environment)) }
        for name in context.attributes.keys.sorted() {
            guard let value = context.attributes[name], let text = EndpointSupport.text(value) else { continue }
            query.append((Self.standardFields.contains(name) ? name : "properties[\(name)]", text))
        }
        let url = try EndpointSupport.url(baseURL, appending: ["api", "frontend"], query: query)
        return FlagRequest(url: url, method: "GET", headers: headers)
    }

    /// Reads the toggles.
    package func decode(_ response: FlagResponse, for context: EvaluationContext) throws(FlagError) -> DecodedFlags {
        let top = try EndpointSupport.object(response.body, service: "Unleash")
        guard case .list(let toggles)? = top["toggles"] else {
            throw FlagError(.parseError, "Unleash: the answer has no \"toggles\" list")
        }
        var flags: [String: FlagEntry] = [:]
        for (n, toggle) in toggles.enumerated() {
            guard case .object(let t) = toggle, case .string(let name)? = t["name"], case .bool(let enabled)? = t["enabled"] else {
                throw FlagError(.parseError, "Unleash: toggles[\(n)] needs a name and enabled")
            }
            var variantName: String?
            var payload: FlagValue?
            var metadata: [String: FlagValue] = [:]
            if case .object(let variant)? = t["variant"] {
                if variant["enabled"]?.boolValue == true { variantName = variant["name"]?.stringValue }
                if case .object(let p)? = variant["payload"], let value = p["value"] {
                    payload = value
                    metadata["payloadType"] = p["type"] ?? .null
                }
            }
            if let impression = t["impressionData"] { metadata["impressionData"] = impression }
            flags[name] = FlagEntry(value: .bool(enabled), variant: variantName, metadata: metadata)
            if let payload { flags[name + ".payload"] = FlagEntry(value: payload, variant: variantName, metadata: metadata) }
        }
        return .flags(flags, missingFlagsAreOff: true)
    }
}
