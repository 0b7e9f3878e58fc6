import FeatureFlagsServices
import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FlagServer

/// Each provider's own wire details, byte for byte (no network).
@Suite("Endpoint formats")
struct EndpointFormatTests {
    let context = EvaluationContext(targetingKey: "user-1", venue: "venue-42", partner: "auralink", planTier: "business")
    let at = Date(timeIntervalSince1970: 1_750_000_000)

    private func decode(_ endpoint: FlagEndpoint, _ json: String, etag: String? = "\"t\"") throws -> DecodedFlags {
        try endpoint.decode(FlagResponse(status: 200, headers: etag.map { ["ETag": $0] } ?? [:], body: Array(json.utf8)), for: context)
    }

    private func flags(_ result: DecodedFlags) -> [String: FlagEntry] {
        if let flags = result.flags { return flags }
        Issue.record("expected flags")
        return [:]
    }

    // MARK: OFREP

    @Test func ofrepRequest() throws {
        let endpoint = FlagEndpoint.ofrep(baseURL: URL(string: "https://flags.example.com/")!, headers: ["X-API-Key": "k"])
        let request = try endpoint.request(for: context, etag: "\"e\"")
        #expect(request.method == "POST")
        #expect(request.url.absoluteString == "https://flags.example.com/ofrep/v1/evaluate/flags")
        #expect(request.headers["If-None-Match"] == "\"e\"" && request.headers["X-API-Key"] == "k")
        #expect(try FlagJSON.parse(request.body ?? []) == ["context": context.flagValue])
    }

    @Test func ofrepItemsErrorsAndCodeDefaults() throws {
        let result = try decode(FlagEndpoint.ofrep(baseURL: URL(string: "https://x.example")!), #"""
            {"flags":[
              {"key":"b","value":true,"reason":"TARGETING_MATCH","variant":"on","metadata":{"team":"pos"}},
              {"key":"i","value":3},{"key":"d","value":3.0},
              {"key":"custom","value":"x","reason":"SOME_NEW_REASON"},
              {"key":"deferred","reason":"DEFAULT","variant":"control"},
              {"key":"broken","errorCode":"PARSE_ERROR","errorDetails":"bad rule"},
              {"key":"odd","errorCode":"SOMETHING_ELSE"}
            ]}
            """#)
        let f = flags(result)
        #expect(f["b"] == FlagEntry(value: true, variant: "on", reason: .targetingMatch, metadata: ["team": "pos"]))
        #expect(f["i"]?.value == .int(3) && f["d"]?.value == .double(3.0))
        #expect(f["custom"]?.reason?.rawValue == "SOME_NEW_REASON")
        #expect(f["deferred"] == FlagEntry(value: nil, variant: "control", reason: .default))
        #expect(f["broken"] == FlagEntry(value: nil, reason: .error, errorCode: .parseError, metadata: ["errorDetails": "bad rule"]))
        #expect(f["odd"]?.errorCode == .general)
        // A flag the service could not evaluate reads as the code default, with its code.
        let client = InMemorySnapshot(FlagSnapshot(flags: f))
        #expect(client.details(FlagKey("broken", default: 7)).errorCode == .parseError)
        #expect(client.value(FlagKey("deferred", default: 42)) == 42)
    }

    @Test func ofrepFlagSetMetadataVersionIsTheSnapshotVersion() throws {
        let endpoint = FlagEndpoint.ofrep(baseURL: URL(string: "https://x.example")!)
        let cases: [(String, String?)] = [
            (#"{"version":"v12","team":"pos"}"#, "v12"), (#"{"version":12}"#, "12"), (#"{"team":"pos"}"#, nil),
            (#"{"version":true}"#, nil), (#""not an object""#, nil),
        ]
        for (metadata, version) in cases {
            let result = try decode(endpoint, #"{"flags":[{"key":"a","value":1,"reason":"STATIC"}],"metadata":"# + metadata + "}")
            #expect(result.version == version, "\(metadata)")
            #expect(result.flags?["a"]?.value == 1)
        }
        #expect(try decode(endpoint, #"{"flags":[]}"#).version == nil)
    }

    @Test func ofrepRejectsMalformedItems() {
        let endpoint = FlagEndpoint.ofrep(baseURL: URL(string: "https://x.example")!)
        for json in [#"{"flags":[1]}"#, #"{"flags":[{"value":1}]}"#, #"{"flags":[{"key":"a"},{"key":"a"}]}"#, #"{"flags":[{"key":"a","variant":1}]}"#, #"{}"#] {
            #expect(throws: FlagError.self, "\(json)") { try decode(endpoint, json) }
        }
        #expect(endpoint.failureDetail(FlagResponse(status: 400, body: Array(#"{"errorCode":"INVALID_CONTEXT","errorDetails":"no targetingKey"}"#.utf8))) == "INVALID_CONTEXT: no targetingKey")
    }

    // MARK: LaunchDarkly

    @Test func launchDarklyRequests() throws {
        let endpoint = FlagEndpoint.launchDarkly(mobileKey: "mob-key-1", baseURL: URL(string: "https://ld.example")!)
        let get = try endpoint.request(for: context, etag: nil)
        #expect(get.method == "GET")
        #expect(get.headers["Authorization"] == "api_key mob-key-1")
        #expect(get.url.query == "withReasons=true")
        let encoded = get.url.path.components(separatedBy: "/").last ?? ""
        #expect(get.url.path.hasPrefix("/msdk/evalx/contexts/"))
        #expect(!encoded.contains("=") && !encoded.contains("+") && !encoded.contains("/"))
        let decoded = try FlagJSON.parse(Base64URL.decode(encoded) ?? [])
        #expect(decoded == ["kind": "user", "key": "user-1", "venue": "venue-42", "partner": "auralink", "plan_tier": "business"])
        let report = try FlagEndpoint.launchDarkly(mobileKey: "m", baseURL: URL(string: "https://ld.example")!, useReport: true, withReasons: false)
            .request(for: EvaluationContext(targetingKey: nil, venue: "v"), etag: "\"x\"")
        #expect(report.method == "REPORT" && report.url.absoluteString == "https://ld.example/msdk/evalx/context")
        #expect(report.headers["If-None-Match"] == "\"x\"")
        let anonymous = try FlagJSON.parse(report.body ?? [])
        #expect(anonymous.objectValue?["anonymous"] == true)
        #expect(anonymous.objectValue?["key"]?.stringValue == EvaluationContext(targetingKey: nil, venue: "v").fingerprint)
    }

    @Test func launchDarklyFlagMapAndReasons() throws {
        let result = try decode(FlagEndpoint.launchDarkly(mobileKey: "m"), ##"""
            {"checkout":{"value":true,"variation":1,"version":12,"flagVersion":40,"reason":{"kind":"RULE_MATCH","ruleIndex":0}},
             "theme":{"value":"#2C3E50","variation":0,"version":3,"reason":{"kind":"FALLTHROUGH"}},
             "off":{"value":false,"variation":2,"reason":{"kind":"OFF"}},
             "nulled":{"value":null,"reason":{"kind":"ERROR","errorKind":"MALFORMED_FLAG"}},
             "target":{"value":1.5,"variation":3,"reason":{"kind":"TARGET_MATCH"}},
             "plain":{"value":[1,2]}}
            """##)
        let f = flags(result)
        #expect(f["checkout"]?.value == true && f["checkout"]?.variant == "1" && f["checkout"]?.reason == .targetingMatch)
        #expect(f["checkout"]?.metadata["version"] == 12 && f["checkout"]?.metadata["flagVersion"] == 40)
        #expect(f["theme"]?.reason == .default)
        #expect(f["off"]?.reason == .disabled)
        #expect(f["nulled"]?.value == nil && f["nulled"]?.errorCode == .parseError)
        #expect(f["target"]?.reason == .targetingMatch && f["target"]?.value == .double(1.5))
        #expect(f["plain"]?.reason == nil && f["plain"]?.variant == nil)
        #expect(LaunchDarklyEndpoint.map(kind: "ERROR", errorKind: "USER_NOT_SPECIFIED").1 == .targetingKeyMissing)
        #expect(LaunchDarklyEndpoint.map(kind: "BRAND_NEW", errorKind: nil).0.rawValue == "BRAND_NEW")
        #expect(throws: FlagError.self) { try decode(FlagEndpoint.launchDarkly(mobileKey: "m"), #"{"a":1}"#) }
    }

    // MARK: Firebase

    @Test func firebaseRequest() throws {
        let endpoint = FlagEndpoint.firebaseRemoteConfig(
            projectID: "508767403424", apiKey: "AIza-secret", appID: "1:508767403424:ios:abc", appInstanceID: "inst-1",
            extraFields: ["appVersion": "1.2.3", "languageCode": "en-US"])
        let request = try endpoint.request(for: context, etag: "\"e\"")
        #expect(request.method == "POST")
        #expect(request.url.absoluteString == "https://firebaseremoteconfig.googleapis.com/v1/projects/508767403424/namespaces/firebase:fetch?key=AIza-secret")
        let body = try FlagJSON.parse(request.body ?? []).objectValue ?? [:]
        #expect(body["appId"] == "1:508767403424:ios:abc" && body["appInstanceId"] == "inst-1" && body["appVersion"] == "1.2.3")
        let properties = body["analyticsUserProperties"]?.objectValue ?? [:]
        #expect(properties["partner"] == "auralink" && properties["plan_tier"] == "business", "every scalar attribute")
        #expect(properties["provider_plan_type"] == nil, "no demo-specific properties by default")
        #expect(properties["venue"] == "venue-42")
    }

    @Test func firebaseStates() throws {
        let endpoint = FlagEndpoint.firebaseRemoteConfig(projectID: "p", apiKey: "k", appID: "a", appInstanceID: "i")
        let update = try decode(endpoint, ##"{"entries":{"plan_data_limit":"750","plan_priority_support":"true","plan_feature_list":"[\"usage\",\"team\"]","plan_themeColor":"#2C3E50"},"state":"UPDATE","templateVersion":"17"}"##)
        guard let entries = update.flags, let version = update.version else {
            Issue.record("expected flags")
            return
        }
        #expect(version == "17")
        let client = InMemorySnapshot(FlagSnapshot(flags: entries))
        #expect(client.value(FlagKey("plan_data_limit", default: 0)) == 750)
        #expect(client.value(FlagKey("plan_priority_support", default: false)))
        #expect(client.value(FlagKey("plan_feature_list", default: [String]())) == ["usage", "team"])
        #expect(client.value(FlagKey("plan_themeColor", default: "")) == "#2C3E50")
        #expect(try decode(endpoint, #"{"state":"NO_CHANGE"}"#) == .notModified)
        #expect(try flags(decode(endpoint, #"{"state":"NO_TEMPLATE"}"#)).isEmpty)
        #expect(try flags(decode(endpoint, #"{"state":"EMPTY_CONFIG","templateVersion":18}"#)).isEmpty)
        #expect(throws: FlagError.self) { try decode(endpoint, #"{"state":"INSTANCE_STATE_UNSPECIFIED"}"#) }
        #expect(throws: FlagError.self) { try decode(endpoint, #"{"state":"UPDATE","entries":{"a":1}}"#) }
        #expect(endpoint.failureDetail(FlagResponse(status: 403, body: Array(#"{"error":{"code":403,"message":"API key not valid","status":"PERMISSION_DENIED"}}"#.utf8))) == "PERMISSION_DENIED: API key not valid")
    }

    // MARK: Unleash

    @Test func unleashRequest() throws {
        let endpoint = FlagEndpoint.unleash(baseURL: URL(string: "https://unleash.example/proxy")!, clientKey: "*:development.abc", appName: "pos")
        let c = EvaluationContext(targetingKey: "user 1", attributes: ["sessionId": "s-9", "plan_tier": "business", "n": 3])
        let request = try endpoint.request(for: c, etag: nil)
        #expect(request.method == "GET" && request.headers["Authorization"] == "*:development.abc")
        #expect(request.url.path == "/proxy/api/frontend")
        let items = URLComponents(url: request.url, resolvingAgainstBaseURL: false)?.queryItems ?? []
        let query = Dictionary(items.map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { a, _ in a })
        #expect(query == ["userId": "user 1", "appName": "pos", "sessionId": "s-9", "properties[plan_tier]": "business", "properties[n]": "3"])
    }

    @Test func unleashTogglesAndPayloads() throws {
        let result = try decode(FlagEndpoint.unleash(baseURL: URL(string: "https://u.example")!, clientKey: "k"), #"""
            {"toggles":[
              {"name":"new_checkout","enabled":true,"variant":{"name":"disabled","enabled":false},"impressionData":false},
              {"name":"banner","enabled":true,"variant":{"name":"blue","enabled":true,"payload":{"type":"json","value":"{\"title\":\"Hi\"}"}}},
              {"name":"limit","enabled":true,"variant":{"name":"big","enabled":true,"payload":{"type":"number","value":"750"}}}
            ]}
            """#)
        let f = flags(result)
        #expect(f["new_checkout"]?.value == true && f["new_checkout"]?.variant == nil)
        #expect(f["banner"]?.value == true && f["banner"]?.variant == "blue")
        #expect(f["banner.payload"]?.value == .string(#"{"title":"Hi"}"#))
        let client = InMemorySnapshot(FlagSnapshot(flags: f))
        struct Banner: Codable, Sendable { let title: String }
        #expect(client.value(FlagKey("banner.payload", default: Banner(title: "-"))).title == "Hi")
        #expect(client.value(FlagKey("limit.payload", default: 0)) == 750)
        #expect(client.value(FlagKey("absent_toggle", default: false)) == false)
        #expect(throws: FlagError.self) { try decode(FlagEndpoint.unleash(baseURL: URL(string: "https://u.example")!, clientKey: "k"), #"{"toggles":[{"name":"x"}]}"#) }
    }
}
