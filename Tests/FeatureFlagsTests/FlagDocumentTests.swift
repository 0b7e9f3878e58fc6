import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FlagServer

@Suite("Flag document, JSON endpoint and server document")
struct FlagDocumentTests {
    let context = EvaluationContext(targetingKey: "user-1", venue: "venue 42/a", partner: "auralink", planTier: "business")

    @Test func parsesBareAndFullForms() throws {
        let json = #"""
            {"meta_config_version":"2025-08-04T10:00:00Z","meta_ttl_seconds":86400,"extra":1,
             "flags":{"a":true,"b":2.0,"c":{"value":{"nested":[1]},"variant":"v","reason":"TARGETING_MATCH","metadata":{"m":1}},
                      "d":{"errorCode":"FLAG_NOT_FOUND"},"e":["x"],"f":{"value":null}}}
            """#
        let doc = try FlagDocument(json: Array(json.utf8))
        #expect(doc.version == "2025-08-04T10:00:00Z")
        #expect(doc.ttl == 86_400)
        #expect(doc.flags["a"] == FlagEntry(value: true))
        #expect(doc.flags["b"] == FlagEntry(value: .double(2.0)))
        #expect(doc.flags["c"] == FlagEntry(value: ["nested": [1]], variant: "v", reason: .targetingMatch, metadata: ["m": 1]))
        #expect(doc.flags["d"] == FlagEntry(value: nil, errorCode: .flagNotFound))
        #expect(doc.flags["e"] == FlagEntry(value: ["x"]))
        #expect(doc.flags["f"] == FlagEntry(value: .null))
        // Round trip through the canonical form.
        #expect(try FlagDocument(json: doc.jsonBytes()) == doc)
    }

    @Test func rejectsMalformedDocuments() {
        let cases: [(String, String)] = [
            ("[]", "not a JSON object"),
            ("{}", "no \"flags\" object"),
            (#"{"flags":[]}"#, "no \"flags\" object"),
            (#"{"flags":{},"meta_ttl_seconds":"1"}"#, "meta_ttl_seconds is a string"),
            (#"{"flags":{},"meta_ttl_seconds":-1}"#, "negative"),
            (#"{"flags":{},"meta_config_version":3}"#, "meta_config_version is an int"),
            (#"{"flags":{"x":{"value":1,"colour":2}}}"#, "unknown member \"colour\""),
            (#"{"flags":{"x":{"value":1,"variant":2}}}"#, "variant is an int"),
            (#"{"flags":{"x":{"value":1,"metadata":[]}}}"#, "metadata is a list"),
            (#"{"flags":{"x":1,"x":2}}"#, "duplicate key"),
            ("{\"flags\":{", "unexpected end"),
        ]
        for (json, expected) in cases {
            do {
                _ = try FlagDocument(json: Array(json.utf8))
                Issue.record("accepted \(json)")
            } catch {
                #expect(error.code == .parseError)
                #expect(error.message.contains(expected), "\(json): \(error.message)")
            }
        }
    }

    @Test func postRequestCarriesTheContext() throws {
        let endpoint = FlagEndpoint.json(post: URL(string: "https://flags.example.com/flags")!, headers: ["Authorization": "Bearer s3cret"])
        let request = try endpoint.request(for: context, etag: "\"abc\"")
        #expect(request.method == "POST")
        #expect(request.headers["If-None-Match"] == "\"abc\"")
        #expect(request.headers["Authorization"] == "Bearer s3cret")
        #expect(request.headers["Content-Type"] == "application/json")
        let body = try FlagJSON.parse(request.body ?? [])
        #expect(body == ["context": context.flagValue])
        #expect(try endpoint.request(for: context, etag: nil).headers["If-None-Match"] == nil)
    }

    @Test func templateRequestEncodesOnePathSegment() throws {
        let endpoint = FlagEndpoint.json(urlTemplate: "https://cdn.example.com/flags/{venue}/{partner}-{targetingKey}.json")
        let request = try endpoint.request(for: context, etag: nil)
        #expect(request.method == "GET")
        #expect(request.body == nil)
        #expect(request.url.absoluteString == "https://cdn.example.com/flags/venue%2042%2Fa/auralink-user-1.json")
    }

    @Test func templateNeedsItsAttributes() {
        let endpoint = FlagEndpoint.json(urlTemplate: "https://cdn.example.com/{region}.json")
        #expect(throws: FlagError(.invalidContext, "the URL template needs the context attribute \"region\"")) {
            try endpoint.request(for: context, etag: nil)
        }
        #expect(throws: FlagError.self) {
            try FlagEndpoint.json(urlTemplate: "https://cdn.example.com/{venue.json").request(for: context, etag: nil)
        }
    }

    @Test func decodeReadsFlagsVersionAndTTL() throws {
        let endpoint = FlagEndpoint.json(post: URL(string: "https://x.example/flags")!)
        let body = FlagDocument(version: "v9", ttl: 60, flags: ["a": FlagEntry(value: 1)]).jsonBytes()
        let result = try endpoint.decode(FlagResponse(status: 200, headers: ["ETag": "\"t\""], body: body), for: context)
        #expect(result == .flags(["a": FlagEntry(value: 1)], version: "v9", ttl: 60))
        #expect(endpoint.failureDetail(FlagResponse(status: 500, body: Array(#"{"error":"db down"}"#.utf8))) == "db down")
        #expect(endpoint.failureDetail(FlagResponse(status: 500, body: Array("oops".utf8))) == nil)
    }

    @Test func seedsDocumentTargetsPartnerTierAndVenue() {
        let doc = ServerDocument.seedExample
        func flags(_ partner: String, _ tier: String, venue: String? = nil) -> [String: FlagValue] {
            doc.evaluate(for: EvaluationContext(targetingKey: "u", venue: venue, partner: partner, planTier: tier)).flags
                .compactMapValues(\.value)
        }
        let rows: [(String, String, String, String, Int, Bool, Bool)] = [
            ("auralink", "personal", "AuraLink Personal", "#3498DB", 150, false, false),
            ("auralink", "business", "AuraLink Business", "#2C3E50", 750, true, true),
            ("zenithsat", "personal", "ZenithSat Home", "#2ECC71", 180, false, false),
            ("zenithsat", "business", "ZenithSat Pro", "#6C3483", 1500, true, true),
        ]
        for (partner, tier, name, color, limit, support, team) in rows {
            let f = flags(partner, tier)
            #expect(f["plan_displayName"] == .string(name))
            #expect(f["plan_themeColor"] == .string(color))
            #expect(f["plan_data_limit"] == .int(limit))
            #expect(f["plan_priority_support"] == .bool(support))
            #expect(f["plan_feature_list"]?.listValue?.contains("team") == team)
        }
        // Unknown partner: the document's defaults, reason DEFAULT.
        let unknown = doc.evaluate(for: EvaluationContext(targetingKey: "u", partner: "other"))
        #expect(unknown.flags["plan_displayName"]?.value == "Standard")
        #expect(unknown.flags["plan_displayName"]?.reason == .default)
        // A venue rule listed first adds its feature while the plan rule still sets the theme.
        let venue = doc.evaluate(for: EvaluationContext(targetingKey: "u", venue: "venue-42", partner: "auralink", planTier: "personal"))
        #expect(venue.flags["new_checkout"] == FlagEntry(value: true, variant: "venue-42-pilot", reason: .targetingMatch))
        #expect(venue.flags["plan_themeColor"]?.value == "#3498DB")
        #expect(venue.flags["plan_themeColor"]?.variant == "auralink-personal")
        #expect(flags("auralink", "personal", venue: "venue-7")["new_checkout"] == false)
    }

    @Test func serverDocumentRoundTripsAndRejectsBadRules() throws {
        let doc = ServerDocument.seedExample
        #expect(try ServerDocument(json: doc.jsonBytes()) == doc)
        #expect(throws: FlagError.self) { try ServerDocument(json: Array(#"{"flags":{},"rules":{}}"#.utf8)) }
        #expect(throws: FlagError.self) { try ServerDocument(json: Array(#"{"flags":{},"rules":[1]}"#.utf8)) }
        #expect(throws: FlagError.self) { try ServerDocument(json: Array(#"{"flags":{},"rules":[{"when":{}}]}"#.utf8)) }
        let matchAll = try ServerDocument(json: Array(#"{"flags":{"a":1},"rules":[{"flags":{"a":2}},{"when":{"targetingKey":["u"]},"flags":{"b":3}}]}"#.utf8))
        let evaluated = matchAll.evaluate(for: EvaluationContext(targetingKey: "u"))
        #expect(evaluated.flags["a"]?.value == 2)
        #expect(evaluated.flags["a"]?.variant == "rule-0")
        #expect(evaluated.flags["b"]?.value == 3)
    }
}
