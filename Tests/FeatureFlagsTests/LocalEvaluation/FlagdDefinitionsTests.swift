import Foundation
import Testing
@testable import FeatureFlags
@testable import FeatureFlagsFlagd

/// The definitions format: documents the schema accepts, documents it refuses, and where
/// each problem is reported.
@Suite("flagd definitions")
struct FlagdDefinitionsTests {
    func parse(_ text: String) throws -> FlagdDefinitions { try FlagdDefinitions.parse(Array(text.utf8)) }
    func paths(_ text: String) throws -> [String] { try parse(text).problems.map(\.path) }

    @Test func aVariantNamedByTheContextIsNotEchoedInTheError() throws {
        // A rule that returns a context value as the variant name: the error must not carry it.
        let definitions = try parse(#"""
            {"flags": {"a": {"state": "ENABLED", "variants": {"on": true}, "defaultVariant": "on",
                             "targeting": {"var": "email"}}}}
            """#)
        let entry = definitions.evaluate(flag: "a", for: EvaluationContext(attributes: ["email": "alice@example.com"]))
        #expect(entry?.errorCode == .general)
        let details = entry?.metadata["errorDetails"]?.stringValue ?? ""
        #expect(details == "the targeting named a variant this flag does not define")
        #expect(!details.contains("alice"))
    }

    @Test func theListFormCarriesKeys() throws {
        let definitions = try parse(#"""
            {"flags": [{"key": "a", "state": "ENABLED", "variants": {"on": true}, "defaultVariant": "on"},
                       {"key": "a", "state": "ENABLED", "variants": {"on": false}, "defaultVariant": "on"},
                       {"state": "ENABLED"}]}
            """#)
        #expect(definitions.keys == ["a"])
        #expect(definitions.evaluate(flag: "a", for: .anonymous)?.value == true)
        #expect(definitions.problems.map(\.path) == ["flags[1].key", "flags[2]"])
    }

    @Test func wholeDocumentFailures() {
        #expect(throws: FlagdDocumentError.self) { try parse("not json") }
        #expect(throws: FlagdDocumentError.self) { try parse("[]") }
        #expect(throws: FlagdDocumentError.self) { try parse(#"{"$evaluators": {}}"#) }
        #expect(throws: FlagdDocumentError.self) { try parse(#"{"flags": "x"}"#) }
        let huge = [UInt8](repeating: 0x20, count: FlagdDefinitions.maxDocumentBytes + 1)
        #expect(throws: FlagdDocumentError.self) { try FlagdDefinitions.parse(huge) }
        do {
            _ = try parse(#"{"flags": 1}"#)
        } catch {
            #expect((error as? FlagdDocumentError)?.description == "flags: is an int, expected an object (or a list of flags)")
        }
    }

    @Test func oneBrokenFlagLeavesTheOthers() throws {
        let definitions = try parse(#"""
            {"flags": {"good": {"state": "ENABLED", "variants": {"on": true}, "defaultVariant": "on"},
                       "bad": {"state": "ENABLED", "variants": {"on": [1]}, "defaultVariant": "on"}}}
            """#)
        #expect(definitions.evaluate(flag: "good", for: .anonymous)?.value == true)
        let bad = definitions.evaluate(flag: "bad", for: .anonymous)
        #expect(bad?.errorCode == .parseError && bad?.value == nil && bad?.reason == .error)
        #expect(bad?.metadata["errorDetails"]?.stringValue?.hasPrefix("flags.bad.variants.on") == true)
    }

    @Test func everyFieldIsChecked() throws {
        #expect(try paths(#"{"flags": {"f": 3}}"#) == ["flags.f"])
        #expect(try paths(#"{"flags": {"f": {"variants": {"a": 1}, "defaultVariant": "a"}}}"#) == ["flags.f.state"])
        #expect(try paths(#"{"flags": {"f": {"state": "ENABLED", "defaultVariant": null}}}"#) == ["flags.f.variants"])
        #expect(try paths(#"{"flags": {"f": {"state": "ENABLED", "variants": 1}}}"#) == ["flags.f.variants"])
        #expect(try paths(#"{"flags": {"f": {"state": "ENABLED", "variants": {"a": null}}}}"#) == ["flags.f.variants.a"])
        #expect(try paths(#"{"flags": {"f": {"state": "ENABLED", "variants": {"a": 1}, "defaultVariant": 1}}}"#) == ["flags.f.defaultVariant"])
        #expect(try paths(#"{"flags": {"f": {"state": "ENABLED", "variants": {"a": 1}, "targeting": "a"}}}"#) == ["flags.f.targeting"])
        #expect(try paths(#"{"flags": {"": {"state": "ENABLED", "variants": {"a": 1}}}}"#) == ["flags."])
        #expect(try paths(#"{"flags": {}, "metadata": {"a": [1]}}"#) == ["metadata.a"])
        #expect(try paths(#"{"flags": {}, "metadata": 3}"#) == ["metadata"])
        #expect(try paths(#"{"flags": {}, "$evaluators": 3}"#) == ["$evaluators"])
        #expect(try paths(#"{"flags": {}, "$evaluators": {"x": {"nope": 1}}}"#) == ["$evaluators.x"])
        // Metadata problems are reported but do not break the flag.
        let withBadMetadata = try parse(#"{"flags": {"f": {"state": "ENABLED", "variants": {"a": 1}, "defaultVariant": "a", "metadata": {"m": {}}}}}"#)
        #expect(withBadMetadata.problems.map(\.path) == ["flags.f.metadata.m"])
        #expect(withBadMetadata.evaluate(flag: "f", for: .anonymous)?.value == 1)
    }

    @Test func theSchemasPositiveShapes() throws {
        let definitions = try parse(#"""
            {"$schema": "https://flagd.dev/schema/v0/flags.json",
             "flags": {
               "b": {"state": "ENABLED", "variants": {"true": true, "false": false}, "defaultVariant": "false",
                     "targeting": {"ends_with": [{"var": "email"}, "@example.com"]}},
               "n": {"state": "DISABLED", "variants": {"one": 1, "half": 0.5}, "defaultVariant": "one"},
               "o": {"state": "ENABLED", "variants": {"x": {"deep": {"list": [1, 2]}}}, "defaultVariant": "x", "targeting": {}},
               "s": {"state": "ENABLED", "variants": {"a": "A"}, "defaultVariant": "a", "metadata": {"owner": "pos", "v": 2}}
             },
             "$evaluators": {"unused": {"==": [1, 1]}},
             "metadata": {"flagSetId": "shop", "version": "7"},
             "anythingElse": true}
            """#)
        #expect(definitions.problems.isEmpty)
        // The Boolean shorthand: a rule's true/false names the variants "true"/"false".
        #expect(definitions.evaluate(flag: "b", for: EvaluationContext(attributes: ["email": "a@example.com"]))?.value == true)
        #expect(definitions.evaluate(flag: "b", for: EvaluationContext(attributes: ["email": "a@other.com"]))?.value == false)
        #expect(definitions.evaluate(flag: "n", for: .anonymous)?.reason == .disabled)
        #expect(definitions.evaluate(flag: "o", for: .anonymous)?.reason == .static)
        #expect(definitions.evaluate(flag: "s", for: .anonymous)?.metadata == ["owner": "pos", "v": 2, "flagSetId": "shop", "version": "7"])
        #expect(definitions.targetedCount == 1 && definitions.version == "7")
    }

    @Test func aRuleThatNamesNoVariantIsAGeneralError() throws {
        let definitions = try parse(#"""
            {"flags": {"f": {"state": "ENABLED", "variants": {"a": 1}, "defaultVariant": "a", "targeting": {"var": "pick"}}}}
            """#)
        func entry(_ pick: FlagValue) -> FlagEntry? { definitions.evaluate(flag: "f", for: EvaluationContext(attributes: ["pick": pick])) }
        #expect(entry("a")?.value == 1 && entry("a")?.reason == .targetingMatch)
        #expect(entry("zz")?.errorCode == .general && entry("zz")?.value == nil)
        #expect(entry(3)?.errorCode == .general)
        #expect(entry(["a"])?.errorCode == .general)
        #expect(entry(.null)?.reason == .default && entry(.null)?.value == 1)
    }

    @Test func rulesSurviveTheFallbackFile() throws {
        let document = Array(#"{"flags": {"f": {"state": "ENABLED", "variants": {"a": 1, "b": 2}, "defaultVariant": "a", "targeting": {"if": [{"var": "x"}, "b"]}}}}"#.utf8)
        let rules = LocalRules(
            definitions: try FlagdDefinitions.parse(document, bucketing: .legacyPercent), document: document,
            etag: EntityTag("\"e\"", endpoint: "0/flagd"), fetchedAt: Date(timeIntervalSince1970: 1_000))
        let decoded = try #require(LocalRules.decode(ArraySlice(rules.encoded())))
        #expect(decoded == rules)
        #expect(decoded.definitions.bucketing == .legacyPercent)
        #expect(decoded.snapshot(for: EvaluationContext(attributes: ["x": true]), at: Date())["f"]?.value == 2)
        #expect(LocalRules.decode(ArraySlice(rules.encoded().dropLast())) == nil)
        #expect(LocalRules.decode([9, 9]) == nil)
        // A header whose fetch time is not a finite number (a forged file) is not read: an
        // infinite age would reach every place that shows or compares it.
        let stored = rules.encoded()
        let time = (0..<8).map { UInt8(truncatingIfNeeded: (1_000.0 as Double).bitPattern >> UInt64(8 * $0)) }
        let at = try #require((0...(stored.count - 8)).first { Array(stored[$0..<($0 + 8)]) == time })
        for forged in [-Double.infinity, .infinity, .nan] {
            var bytes = stored
            for i in 0..<8 { bytes[at + i] = UInt8(truncatingIfNeeded: forged.bitPattern >> UInt64(8 * i)) }
            #expect(LocalRules.decode(ArraySlice(bytes)) == nil, "fetched at \(forged)")
        }
    }
    /// Evaluators that each name the next twice double per level: 18 levels (966 bytes) took
    /// 6.9 s to parse in a debug build, and 32 (the nesting allowed) would never end. Each
    /// evaluator is now compiled once, and a rule standing for more than one evaluation's
    /// budget is refused; shared evaluators of ordinary size still serve every flag.
    @Test func referencesThatDoubleAtEveryLevelAreRefusedNotExpanded() throws {
        func document(levels: Int) -> String {
            var evaluators: [String] = []
            for i in 0..<levels { evaluators.append(#""e\#(i)":{"or":[{"$ref":"e\#(i + 1)"},{"$ref":"e\#(i + 1)"}]}"#) }
            evaluators.append(#""e\#(levels)":{"==":[{"var":"x"},1]}"#)
            return #"{"$evaluators":{"# + evaluators.joined(separator: ",") + #"},"flags":{"#
                + #""f":{"state":"ENABLED","variants":{"on":true,"off":false},"defaultVariant":"off","targeting":{"if":[{"$ref":"e0"},"on","off"]}},"#
                + #""g":{"state":"ENABLED","variants":{"on":true,"off":false},"defaultVariant":"off","targeting":{"if":[{"$ref":"e\#(levels - 10)"},"on","off"]}}}}"#
        }
        let defs = try parse(document(levels: 30))
        // e0 … e16 each stand for more than 100,000 operations (e16 for about 115,000): said
        // where it is found, for e16 itself, and for f (which refers to e0) — not once per level.
        let oversized = defs.problems.filter { $0.message.contains("more than 100000 operations") }
        #expect(oversized.count == 4, "\(oversized.map { "\($0.path): \($0.message)" })")
        #expect(oversized.contains { $0.path.hasPrefix("$evaluators.e16") })
        let context = EvaluationContext(targetingKey: "u", attributes: ["x": 1])
        #expect(defs.evaluate(flag: "f", for: context)?.errorCode == .parseError)
        // g refers to e22: 10 levels, about 7,000 operations — compiled once, evaluated whole.
        #expect(!defs.problems.contains { $0.path.hasPrefix("flags.g") })
        #expect(defs.evaluate(flag: "g", for: context)?.value == true)
    }
    /// Shared evaluators are compiled once, yet a use is judged as if it expanded them: a chain
    /// of references one too deep is refused through a flag even where its evaluators, checked
    /// on their own first, were compiled and kept.
    @Test func aKeptEvaluatorStillCountsItsNestingAtEveryUse() throws {
        func document(chain: Int) -> String {
            var evaluators: [String] = []
            for i in 0..<chain { evaluators.append(#""e\#(i)":{"!":{"$ref":"e\#(i + 1)"}}"#) }
            evaluators.append(#""e\#(chain)":{"==":[{"var":"x"},1]}"#)
            return #"{"$evaluators":{"# + evaluators.joined(separator: ",") + #"},"flags":{"#
                + #""f":{"state":"ENABLED","variants":{"on":true,"off":false},"defaultVariant":"off","targeting":{"if":[{"$ref":"e0"},"on","off"]}},"#
                + #""g":{"state":"ENABLED","variants":{"on":true,"off":false},"defaultVariant":"off","targeting":{"if":[{"$ref":"e1"},"on","off"]}}}}"#
        }
        // e0 … e32: e0 reaches 33 references deep, e1 exactly 32.
        let defs = try parse(document(chain: 32))
        let context = EvaluationContext(targetingKey: "u", attributes: ["x": 1])
        #expect(defs.evaluate(flag: "f", for: context)?.errorCode == .parseError)
        #expect(defs.evaluate(flag: "g", for: context)?.errorCode == nil)
        #expect(defs.problems.contains { $0.message.contains("nest deeper than 32") })
    }

    /// A variant is found by the bytes of its name, as flagd's evaluator finds it: a rule (or
    /// a default) naming "é" decomposed does not pick the variant "é" composed.
    @Test func variantsAreFoundByTheBytesOfTheirNames() throws {
        let definitions = try FlagdDefinitions.parse(Array(#"""
            {"flags": {
              "rule": {"state": "ENABLED", "variants": {"caf\u00e9": 1, "tea": 2}, "defaultVariant": "tea",
                       "targeting": {"if": [{"var": "decomposed"}, "cafe\u0301", "caf\u00e9"]}},
              "default": {"state": "ENABLED", "variants": {"caf\u00e9": 1}, "defaultVariant": "cafe\u0301"}}}
            """#.utf8))
        #expect(definitions.evaluate(flag: "rule", for: .anonymous)?.value == 1)
        let decomposed = definitions.evaluate(flag: "rule", for: EvaluationContext(attributes: ["decomposed": true]))
        #expect(decomposed?.reason == .error && decomposed?.errorCode == .general, "\(String(describing: decomposed))")
        #expect(definitions.problems.map(\.path) == ["flags.default.defaultVariant"])
    }
}
