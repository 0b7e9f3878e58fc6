package import FeatureFlags
package import Foundation

/// Firebase Remote Config's REST fetch, the call the mobile SDKs make.
///
/// - Request: `POST {base}/v1/projects/{project}/namespaces/{namespace}:fetch?key={API key}` with
///   `{"appId", "appInstanceId", "appInstanceIdToken", "analyticsUserProperties", …}`. The
///   context travels as analytics user properties (conditions in the console target them):
///   by default every scalar attribute as text (pass `userProperties:` to shape them, e.g. to
///   combine two attributes into the one property a console condition targets).
/// - 200: `{"entries": {key: "text"}, "state": "UPDATE" | "NO_CHANGE" | "NO_TEMPLATE" |
///   "EMPTY_CONFIG", "templateVersion": "12"}`. Every value is text and is typed by the
///   `FlagKey` that reads it (`"true"` → Bool, `"150"` → Int, JSON text → lists and structs).
///   `NO_CHANGE` (like a 304) keeps the current values; `NO_TEMPLATE` and `EMPTY_CONFIG` mean
///   "no parameters for you": an empty snapshot, so code and bundled defaults apply.
///   `templateVersion` becomes the snapshot version.
package struct FirebaseRemoteConfigEndpoint: EndpointFormat {
    private let projectID: String
    private let apiKey: String
    private let appID: String
    private let appInstanceID: String
    private var baseURL: URL { baseURLReference.url }
    // Held by reference: a stored `URL` has no fixed layout on Apple platforms (FixedLayout.swift).
    private let baseURLReference: URLReference
    private let namespace: String
    private let extraFields: [String: String]
    private let userProperties: @Sendable (EvaluationContext) -> [String: String]

    /// `"firebase"`.
    package var name: String { "firebase" }

    /// The public Remote Config host.
    package static let defaultBaseURL = URL(string: "https://firebaseremoteconfig.googleapis.com") ?? URL(fileURLWithPath: "/")

    /// An endpoint for one app installation.
    /// - Parameters:
    ///   - projectID: the project number or id.
    ///   - apiKey: the app's web API key (sent in the query; never logged).
    ///   - appID: `1:…:ios:…`.
    ///   - appInstanceID: this installation's id.
    ///   - extraFields: more request fields, e.g. `appVersion`, `languageCode`, `timeZone`.
    ///   - userProperties: the analytics user properties for a context.
    package init(
        projectID: String, apiKey: String, appID: String, appInstanceID: String,
        baseURL: URL = FirebaseRemoteConfigEndpoint.defaultBaseURL, namespace: String = "firebase",
        extraFields: [String: String] = [:],
        userProperties: @escaping @Sendable (EvaluationContext) -> [String: String] = FirebaseRemoteConfigEndpoint.defaultUserProperties
    ) {
        self.projectID = projectID
        self.apiKey = apiKey
        self.appID = appID
        self.appInstanceID = appInstanceID
        self.baseURLReference = URLReference(baseURL)
        self.namespace = namespace
        self.extraFields = extraFields
        self.userProperties = userProperties
    }

    /// Every scalar attribute as text.
    package static func defaultUserProperties(_ context: EvaluationContext) -> [String: String] {
        context.attributes.compactMapValues(EndpointSupport.text)
    }

    /// The fetch request.
    package func request(for context: EvaluationContext, etag: String?) throws(FlagError) -> FlagRequest {
        // The key goes in the query, as the SDKs send it, and in the header Google APIs also accept.
        var headers = ["Content-Type": "application/json", "Accept": "application/json", "X-Goog-Api-Key": apiKey]
        if let etag { headers["If-None-Match"] = etag }
        let url = try EndpointSupport.url(
            baseURL, appending: ["v1", "projects", projectID, "namespaces", "\(namespace):fetch"], query: [("key", apiKey)])
        var body: [String: FlagValue] = extraFields.mapValues(FlagValue.string)
        body["appId"] = .string(appID)
        body["appInstanceId"] = .string(appInstanceID)
        body["appInstanceIdToken"] = body["appInstanceIdToken"] ?? ""
        body["analyticsUserProperties"] = .object(userProperties(context).mapValues(FlagValue.string))
        return FlagRequest(url: url, method: "POST", headers: headers, body: FlagJSON.bytes(.object(body), sortedKeys: true))
    }

    /// Reads a fetch answer.
    package func decode(_ response: FlagResponse, for context: EvaluationContext) throws(FlagError) -> DecodedFlags {
        let top = try EndpointSupport.object(response.body, service: "Firebase Remote Config")
        let state = try EndpointSupport.string(top, "state", at: "Firebase Remote Config")
        if state == "NO_CHANGE" { return .notModified }
        var flags: [String: FlagEntry] = [:]
        switch (state, top["entries"]) {
        case ("UPDATE", .object(let entries)?), (nil, .object(let entries)?):
            for (key, value) in entries {
                guard case .string = value else {
                    throw FlagError(.parseError, "Firebase Remote Config: entry \"\(key)\" is \(value.typeNameWithArticle), expected text")
                }
                flags[key] = FlagEntry(value: value, reason: .targetingMatch)
            }
        case ("UPDATE", nil):
            break
        case ("NO_TEMPLATE", _), ("EMPTY_CONFIG", _):
            break
        case (let other, _):
            throw FlagError(.parseError, "Firebase Remote Config: unexpected state \(other ?? "(none)")")
        }
        let version: String?
        switch top["templateVersion"] {
        case .string(let s)?: version = s
        case .int(let i)?: version = String(i)
        default: version = nil
        }
        return .flags(flags, version: version)
    }

    /// `STATUS: message` from a Google API error body.
    package func failureDetail(_ response: FlagResponse) -> String? {
        guard let top = try? EndpointSupport.object(response.body, service: "Firebase"), case .object(let error)? = top["error"] else {
            return nil
        }
        let status = error["status"]?.stringValue
        let message = error["message"]?.stringValue.map { String($0.prefix(200)) }
        return [status, message].compactMap { $0 }.joined(separator: ": ")
    }
}
