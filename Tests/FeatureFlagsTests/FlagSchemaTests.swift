import FlagServer
import Foundation
import Testing
import TestSupport
@testable import FeatureFlags

@Suite("FlagSchema")
struct FlagSchemaTests {
    let schema = FlagSchema.seedExample

    private func violations(_ values: [String: FlagValue], schema: FlagSchema? = nil) -> [String] {
        (schema ?? self.schema).validate(values.mapValues { FlagEntry(value: $0) }).violations.map(\.description)
    }

    private let good: [String: FlagValue] = [
        "plan_themeColor": "#3498DB", "plan_displayName": "AuraLink Personal", "plan_data_limit": 150,
        "plan_priority_support": false, "plan_feature_list": ["usage", "map"], "kill_switch": false,
    ]

    @Test func theSeedsValuesPass() {
        #expect(violations(good).isEmpty)
        #expect(schema.validate(good.mapValues { FlagEntry(value: $0) }, payloadBytes: 500).isValid)
    }

    @Test func hexColour() {
        for bad in ["3498DB", "#3498D", "#3498DBX", "#GG98DB", "blue"] {
            var values = good
            values["plan_themeColor"] = .string(bad)
            #expect(violations(values) == ["flags.plan_themeColor: \"\(bad)\" is not a hex-color"], "\(bad)")
        }
        var lower = good
        lower["plan_themeColor"] = "#abcdef"
        #expect(violations(lower).isEmpty)
    }

    @Test func typesRangesLengthsEnumsItems() {
        var values = good
        values["plan_data_limit"] = -1
        values["plan_displayName"] = .string(String(repeating: "x", count: 41))
        values["plan_priority_support"] = "yes"
        values["plan_feature_list"] = ["usage", "Teleport!", 3, "teleport"]
        #expect(violations(values) == [
            "flags.plan_data_limit: -1 is below the minimum 0",
            "flags.plan_displayName: longer than 40 characters",
            "flags.plan_feature_list[1]: does not match [a-z][a-z0-9_]*",
            "flags.plan_feature_list[2]: expected string, found int",
            "flags.plan_priority_support: expected bool, found string",
        ])
        values = good
        values["plan_data_limit"] = 2.5
        #expect(violations(values) == ["flags.plan_data_limit: expected int, found double"])
    }

    @Test func requiredKeysAndUnknownKeys() {
        var values = good
        values["kill_switch"] = nil
        values["extra_flag"] = 1
        let report = schema.validate(values.mapValues { FlagEntry(value: $0) })
        #expect(report.violations.map(\.description) == ["flags.kill_switch: required"])
        #expect(report.unknownKeys == ["extra_flag"])
        let strict = try? FlagSchema(json: Array(#"{"unknown_keys":"reject","flags":{"a":{"type":"int"}}}"#.utf8))
        #expect(violations(["a": 1, "b": 2], schema: strict) == ["flags.b: no such flag in the schema"])
    }

    @Test func payloadSize() {
        let report = schema.validate(good.mapValues { FlagEntry(value: $0) }, payloadBytes: 20_000)
        #expect(report.violations.map(\.description) == ["payload: 20000 bytes, more than the 16384 allowed"])
    }

    @Test func patternsAndFormats() throws {
        let schema = try FlagSchema(json: Array(#"""
            {"flags":{"code":{"type":"string","pattern":"[A-Z]{3}-[0-9]+"},"when":{"type":"string","format":"iso8601"},
                      "ratio":{"type":"double","min":0,"max":1},"tags":{"type":"list","minItems":1,"maxItems":2},"anything":{"type":"any"}}}
            """#.utf8))
        #expect(violations(["code": "ABC-12", "when": "2025-08-04T10:00:00Z", "ratio": 1, "tags": ["a"], "anything": [1]], schema: schema).isEmpty)
        #expect(violations(["code": "xABC-12", "when": "yesterday", "ratio": 1.5, "tags": []], schema: schema) == [
            "flags.code: does not match [A-Z]{3}-[0-9]+",
            "flags.ratio: 1.5 is above the maximum 1",
            "flags.tags: fewer than 1 items",
            "flags.when: \"yesterday\" is not a iso8601",
        ])
    }

    @Test func unusableSchemasAreRejected() {
        let cases = [
            #"[]"#, #"{"flags":[]}"#, #"{"flags":{"a":{"type":"uuid"}}}"#, #"{"flags":{"a":{"format":"colour"}}}"#,
            #"{"flags":{"a":{"pattern":"("}}}"#, #"{"flags":{"a":3}}"#, #"{"unknown_keys":"maybe","flags":{}}"#, "{",
        ]
        for text in cases {
            #expect(throws: FlagError.self, "\(text)") { try FlagSchema(json: Array(text.utf8)) }
        }
    }

    @Test func seedSchemaIsComplete() {
        #expect(schema.rules.count == 7)
        #expect(schema.maxPayloadBytes == 16_384)
        #expect(schema.rules["kill_switch"]?.required == true)
    }
}
