import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
@testable import FeatureFlagsFlagd

/// An identify keeps the previous context's answer for a flag whose rule reads nothing that
/// changed (`RuleDependencies`, `LocalRules.snapshot(for:at:)`); every answer must still be
/// what a fresh evaluation gives.
@Suite("Local rules: answers kept across contexts")
struct RuleReuseTests {
    static let document = #"""
        {
          "flags": {
            "static": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "on"},
            "by-venue": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "off",
                         "targeting": {"if": [{"in": [{"var": "venue"}, ["v1", "v2"]]}, "on"]}},
            "by-region-path": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "off",
                               "targeting": {"if": [{"==": [{"var": "geo.region"}, "eu"]}, "on", "off"]}},
            "split": {"state": "ENABLED", "variants": {"a": "A", "b": "B"}, "defaultVariant": "a",
                      "targeting": {"fractional": [["a", 50], ["b", 50]]}},
            "split-by-email": {"state": "ENABLED", "variants": {"a": "A", "b": "B"}, "defaultVariant": "a",
                               "targeting": {"fractional": [{"var": "email"}, ["a", 50], ["b", 50]]}},
            "late": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "off",
                     "targeting": {"if": [{">": [{"var": "$flagd.timestamp"}, 1750000100]}, "on", "off"]}},
            "computed": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "off",
                         "targeting": {"if": [{"var": {"cat": ["ven", "ue"]}}, "on", "off"]}},
            "whole": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "off",
                      "targeting": {"if": [{"missing": ["venue"]}, "off", "on"]}},
            "broken": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "off",
                       "targeting": {"var": "venue"}},
            "by-key": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "off",
                       "targeting": {"if": [{"starts_with": [{"var": "$flagd.flagKey"}, "by"]}, "on", "off"]}}
          }
        }
        """#

    static func rules() throws -> LocalRules {
        let bytes = Array(document.utf8)
        let definitions = try FlagdDefinitions.parse(bytes)
        #expect(definitions.problems.isEmpty, "\(definitions.problems)")
        return LocalRules(definitions: definitions, document: bytes, etag: nil, fetchedAt: Date(timeIntervalSince1970: 1_750_000_000))
    }

    static func compiled(_ name: String, in rules: LocalRules) throws -> FlagdDefinitions.Flag {
        try #require(rules.definitions.flags[name])
    }

    @Test func whatEachRuleReadsIsKnownOrSaidUnknown() throws {
        let rules = try Self.rules()
        #expect(try Self.compiled("static", in: rules).reads == nil, "a constant is never evaluated")
        #expect(try Self.compiled("by-venue", in: rules).reads == ["venue"])
        #expect(try Self.compiled("by-region-path", in: rules).reads == ["geo"], "a path depends on its top-level attribute")
        #expect(try Self.compiled("split", in: rules).reads == ["targetingKey"], "fractional's default bucketing reads the key")
        #expect(try Self.compiled("split-by-email", in: rules).reads == ["targetingKey", "email"])
        #expect(try Self.compiled("late", in: rules).reads == nil, "the evaluation time changes on its own")
        #expect(try Self.compiled("computed", in: rules).reads == nil, "a computed path is unknown")
        #expect(try Self.compiled("whole", in: rules).reads == nil, "missing reads names it computes")
        #expect(try Self.compiled("by-key", in: rules).reads == [], "the flag's own key is fixed")
    }

    /// 300 identifies through random contexts: every table equals a fresh evaluation.
    @Test func everyAnswerIsWhatAFreshEvaluationGives() throws {
        let rules = try Self.rules()
        var random = SplitMix(seed: 7)
        let venues: [FlagValue?] = [nil, "v1", "v2", "v3", 7, .null]
        let regions: [FlagValue?] = [nil, ["region": "eu"], ["region": "us"], "eu"]
        for step in 0..<300 {
            var attributes: [String: FlagValue] = [:]
            if let venue = venues[Int(random.next() % UInt64(venues.count))] { attributes["venue"] = venue }
            if let region = regions[Int(random.next() % UInt64(regions.count))] { attributes["geo"] = region }
            if random.next() % 2 == 0 { attributes["email"] = .string("u\(random.next() % 5)@example.com") }
            let key: String? = random.next() % 4 == 0 ? nil : "user-\(random.next() % 6)"
            let context = EvaluationContext(targetingKey: key, attributes: attributes)
            let date = Date(timeIntervalSince1970: 1_750_000_000 + Double(step))
            let served = rules.snapshot(for: context, at: date).flags
            let fresh = rules.definitions.evaluate(for: context, at: date)
            #expect(served == fresh, "step \(step), \(context)")
            if served != fresh { break }
        }
    }

    @Test func aFlagThatReadsNothingThatChangedKeepsItsAnswer() throws {
        let rules = try Self.rules()
        let first = rules.snapshot(for: EvaluationContext(targetingKey: "u1", attributes: ["venue": "v3"]), at: Date(timeIntervalSince1970: 1_750_000_000))
        // Only the email changes: "broken" (an error made per evaluation) reads only the venue.
        let second = rules.snapshot(
            for: EvaluationContext(targetingKey: "u1", attributes: ["venue": "v3", "email": "a@example.com"]), at: Date(timeIntervalSince1970: 1_750_000_000))
        func extras(_ snapshot: FlagSnapshot, _ name: String) -> FlagExtras? {
            snapshot.storage.table.slot(name, hash: FlagNameHash.of(name))?.pointee.extras
        }
        #expect(second.flags["broken"]?.errorCode == .general)
        #expect(extras(first, "broken") != nil && extras(first, "broken") === extras(second, "broken"), "kept, not evaluated again")
        // The venue changes: evaluated again, a new error.
        let third = rules.snapshot(for: EvaluationContext(targetingKey: "u1", attributes: ["venue": "v4"]), at: Date(timeIntervalSince1970: 1_750_000_000))
        #expect(third.flags["broken"]?.errorCode == .general)
        #expect(extras(second, "broken") !== extras(third, "broken"), "the venue changed: evaluated again")
    }

    /// Rules compare text by its bytes, so a value respelled in another Unicode normal form is
    /// a change: "café" composed, then decomposed, is evaluated again (Swift's `==` calls the
    /// two spellings equal).
    @Test func aValueRespelledInAnotherNormalFormIsEvaluatedAgain() throws {
        let bytes = Array(#"""
            {"flags": {"cafe": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "off",
                                "targeting": {"if": [{"==": [{"var": "venue"}, "caf\u00e9"]}, "on", "off"]}}}}
            """#.utf8)
        let rules = LocalRules(definitions: try FlagdDefinitions.parse(bytes), document: bytes, etag: nil, fetchedAt: Date(timeIntervalSince1970: 1_750_000_000))
        let date = Date(timeIntervalSince1970: 1_750_000_000)
        #expect(rules.snapshot(for: EvaluationContext(targetingKey: "u1", attributes: ["venue": "caf\u{E9}"]), at: date).flags["cafe"]?.value == true)
        #expect(rules.snapshot(for: EvaluationContext(targetingKey: "u1", attributes: ["venue": "cafe\u{301}"]), at: date).flags["cafe"]?.value == false)
    }

    @Test func aRuleOnTheTimeIsEvaluatedAtEveryIdentify() throws {
        let rules = try Self.rules()
        let context = EvaluationContext(targetingKey: "u1")
        #expect(rules.snapshot(for: context, at: Date(timeIntervalSince1970: 1_750_000_000)).flags["late"]?.value == false)
        #expect(rules.snapshot(for: context, at: Date(timeIntervalSince1970: 1_750_000_200)).flags["late"]?.value == true)
    }
}
