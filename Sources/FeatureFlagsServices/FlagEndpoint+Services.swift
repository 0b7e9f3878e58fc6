public import FeatureFlags
public import Foundation

extension FlagEndpoint {
    /// OpenFeature's Remote Evaluation Protocol, bulk evaluation with entity tags:
    /// `POST {baseURL}/ofrep/v1/evaluate/flags`. `baseURL` is the part before `/ofrep/v1`;
    /// `headers` carry the credentials (`Authorization: Bearer …` or `X-API-Key: …`). Change
    /// streams the service advertises (OFREP ADR-0008) are followed. See Docs/Providers.md.
    public static func ofrep(baseURL: URL, headers: [String: String] = [:]) -> FlagEndpoint {
        FlagEndpoint(OFREPEndpoint(baseURL: baseURL, headers: headers))
    }

    /// LaunchDarkly's client-side (mobile) API with `mobileKey`: every flag evaluated for one
    /// context, polled from `baseURL`, with changes streamed from `streamBaseURL` (nil for
    /// either: LaunchDarkly's own hosts); `streaming: false` opens no stream, so changes come
    /// with polls only. The context travels in the URL path, or in
    /// the body of a `REPORT` request with `useReport` (for contexts too large for a URL).
    /// Reasons map to OpenFeature's; see Docs/Providers.md.
    public static func launchDarkly(
        mobileKey: String, baseURL: URL? = nil, streamBaseURL: URL? = nil, streaming: Bool = true, useReport: Bool = false,
        withReasons: Bool = true
    ) -> FlagEndpoint {
        FlagEndpoint(LaunchDarklyEndpoint(
            mobileKey: mobileKey, baseURL: baseURL ?? LaunchDarklyEndpoint.defaultBaseURL,
            streamBaseURL: streaming ? streamBaseURL ?? LaunchDarklyEndpoint.defaultStreamBaseURL : nil, method: useReport ? .report : .get,
            withReasons: withReasons))
    }

    /// Firebase Remote Config's REST fetch for one app installation (the call the mobile SDKs
    /// make). Every value is text, typed by the ``FlagKey`` that reads it.
    /// - Parameters:
    ///   - projectID: the project number or id.
    ///   - apiKey: the app's web API key (sent in the query; never logged).
    ///   - appID: `1:…:ios:…`.
    ///   - appInstanceID: this installation's id.
    ///   - baseURL: the Remote Config host; nil is Google's public one.
    ///   - namespace: the Remote Config namespace.
    ///   - extraFields: more request fields, e.g. `appVersion`, `languageCode`, `timeZone`.
    ///   - userProperties: the analytics user properties for a context (console conditions
    ///     target them); nil sends every scalar attribute as text.
    public static func firebaseRemoteConfig(
        projectID: String, apiKey: String, appID: String, appInstanceID: String, baseURL: URL? = nil,
        namespace: String = "firebase", extraFields: [String: String] = [:],
        userProperties: (@Sendable (EvaluationContext) -> [String: String])? = nil
    ) -> FlagEndpoint {
        FlagEndpoint(FirebaseRemoteConfigEndpoint(
            projectID: projectID, apiKey: apiKey, appID: appID, appInstanceID: appInstanceID,
            baseURL: baseURL ?? FirebaseRemoteConfigEndpoint.defaultBaseURL, namespace: namespace, extraFields: extraFields,
            userProperties: userProperties ?? FirebaseRemoteConfigEndpoint.defaultUserProperties))
    }

    /// Unleash's frontend API (`GET {baseURL}/api/frontend` with the context as query
    /// parameters), authorised with a frontend `clientKey`. See Docs/Providers.md.
    public static func unleash(baseURL: URL, clientKey: String, appName: String? = nil, environment: String? = nil) -> FlagEndpoint {
        FlagEndpoint(UnleashEndpoint(baseURL: baseURL, clientKey: clientKey, appName: appName, environment: environment))
    }
}
