import Foundation
import Testing
@testable import FeatureFlags
@testable import FeatureFlagsFlagd

/// Cases published by OpenFeature's flagd test bed (evaluator scenarios), rebuilt here as
/// definitions and expectations: the same flag keys, weights and contexts give the same
/// variants in every flagd evaluator, so these pin our hash, bucketing and resolution.
@Suite("flagd conformance")
struct FlagdConformanceTests {
    static let document = #"""
    {
      "flags": {
        "boolean-flag": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "on"},
        "string-flag": {"state": "ENABLED", "variants": {"greeting": "hi", "parting": "bye"}, "defaultVariant": "greeting"},
        "integer-flag": {"state": "ENABLED", "variants": {"one": 1, "ten": 10}, "defaultVariant": "ten"},
        "float-flag": {"state": "ENABLED", "variants": {"tenth": 0.1, "half": 0.5}, "defaultVariant": "half"},
        "object-flag": {"state": "ENABLED", "variants": {"empty": {}, "template": {"showImages": true, "title": "Check out these pics!", "imagesPerPage": 100}}, "defaultVariant": "template"},
        "large-integer-flag": {"state": "ENABLED", "variants": {"big": 2147483647, "small": 1}, "defaultVariant": "big"},
        "huge-integer-flag": {"state": "ENABLED", "variants": {"big": 9007199254740991, "small": 1}, "defaultVariant": "big"},
        "integral-float-flag": {"state": "ENABLED", "variants": {"ten": 10.0, "one": 1.5}, "defaultVariant": "ten"},
        "null-default-flag": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": null},
        "undefined-default-flag": {"state": "ENABLED", "variants": {"small": 10, "big": 1000}},
        "no-default-flag-null-targeting-variant": {"state": "ENABLED", "variants": {"normal": "CFO", "special": "CEO"},
          "targeting": {"if": [{"==": ["jobs@orange.com", {"var": ["email"]}]}, "special", null]}},
        "no-default-flag-undefined-targeting-variant": {"state": "ENABLED", "variants": {"normal": "CFO", "special": "CEO"},
          "targeting": {"if": [{"==": ["jobs@orange.com", {"var": ["email"]}]}, "special"]}},
        "disabled-flag": {"state": "DISABLED", "variants": {"on": true, "off": false}, "defaultVariant": "on"},
        "some-email-targeted-flag": {"state": "ENABLED", "variants": {"hi": "hi", "bye": "bye", "none": "none"}, "defaultVariant": "none",
          "targeting": {"if": [{"$ref": "is_ballmer"}, "hi", "bye"]}},
        "nested-ref-targeted-flag": {"state": "ENABLED", "variants": {"privileged": "privileged", "standard": "standard"}, "defaultVariant": "standard",
          "targeting": {"if": [{"$ref": "is_privileged"}, "privileged", "standard"]}},
        "ref-to-nonexistent-evaluator-flag": {"state": "ENABLED", "variants": {"hit": "hit", "miss": "miss"}, "defaultVariant": "miss",
          "targeting": {"if": [{"$ref": "nonexistent_evaluator"}, "hit", "miss"]}},
        "fractional-flag": {"state": "ENABLED", "variants": {"clubs": "clubs", "diamonds": "diamonds", "hearts": "hearts", "spades": "spades", "wild": "wild"},
          "defaultVariant": "wild",
          "targeting": {"fractional": [{"cat": [{"var": "$flagd.flagKey"}, {"var": "user.name"}]}, ["clubs", 25], ["diamonds", 25], ["hearts", 25], ["spades", 25]]}},
        "fractional-flag-shorthand": {"state": "ENABLED", "variants": {"heads": "heads", "tails": "tails", "draw": "draw"}, "defaultVariant": "draw",
          "targeting": {"fractional": [["heads"], ["tails", 1]]}},
        "fractional-flag-A-shared-seed": {"state": "ENABLED", "variants": {"clubs": "clubs", "diamonds": "diamonds", "hearts": "hearts", "spades": "spades", "wild": "wild"},
          "defaultVariant": "wild",
          "targeting": {"fractional": [{"cat": ["shared-seed", {"var": "user.name"}]}, ["clubs", 25], ["diamonds", 25], ["hearts", 25], ["spades", 25]]}},
        "fractional-flag-B-shared-seed": {"state": "ENABLED", "variants": {"clubs": "ace-of-clubs", "diamonds": "ace-of-diamonds", "hearts": "ace-of-hearts", "spades": "ace-of-spades", "wild": "wild"},
          "defaultVariant": "wild",
          "targeting": {"fractional": [{"cat": ["shared-seed", {"var": "user.name"}]}, ["clubs", 25], ["diamonds", 25], ["hearts", 25], ["spades", 25]]}},
        "fractional-hash-edge-flag": {"state": "ENABLED", "variants": {"lower": "lower", "upper": "upper"}, "defaultVariant": "lower",
          "targeting": {"fractional": [{"var": "targetingKey"}, ["lower", 50], ["upper", 50]]}},
        "fractional-nested-if-flag": {"state": "ENABLED", "variants": {"premium": "premium", "standard": "standard", "fallback": "fallback"}, "defaultVariant": "fallback",
          "targeting": {"fractional": [{"var": "targetingKey"}, [{"if": [{"==": [{"var": "tier"}, "premium"]}, "premium", "standard"]}, 50], ["standard", 50]]}},
        "fractional-nested-var-flag": {"state": "ENABLED", "variants": {"red": "red", "green": "green", "blue": "blue", "fallback": "fallback"}, "defaultVariant": "fallback",
          "targeting": {"fractional": [{"var": "targetingKey"}, [{"var": "color"}, 50], ["blue", 50]]}},
        "fractional-nested-weight-flag": {"state": "ENABLED", "variants": {"red": "red", "blue": "blue", "fallback": "fallback"}, "defaultVariant": "fallback",
          "targeting": {"fractional": [{"var": "targetingKey"}, ["red", {"if": [{"==": [{"var": "tier"}, "premium"]}, 100, 0]}], ["blue", 10]]}},
        "fractional-as-condition-flag": {"state": "ENABLED", "variants": {"big": "hundreds", "small": "ones", "fallback": "zero"}, "defaultVariant": "fallback",
          "targeting": {"if": [{"fractional": [[false, 0], [true, 100]]}, "big", "small"]}},
        "fractional-as-condition-false-flag": {"state": "ENABLED", "variants": {"big": "hundreds", "small": "ones", "fallback": "zero"}, "defaultVariant": "fallback",
          "targeting": {"if": [{"fractional": [[false, 100], [true, 0]]}, "big", "small"]}},
        "fractional-single-entry-flag": {"state": "ENABLED", "variants": {"single": "single", "fallback": "fallback"}, "defaultVariant": "fallback",
          "targeting": {"fractional": [["single", 1]]}},
        "fractional-null-bucket-key-flag": {"state": "ENABLED", "variants": {"one": "one", "two": "two", "fallback": "fallback"}, "defaultVariant": "fallback",
          "targeting": {"fractional": [{"var": "missing_key"}, ["one", 50], ["two", 50]]}},
        "starts-ends-flag": {"state": "ENABLED", "variants": {"prefix": "prefix", "postfix": "postfix", "none": "none"}, "defaultVariant": "none",
          "targeting": {"if": [{"starts_with": [{"var": "id"}, "abc"]}, "prefix", {"if": [{"ends_with": [{"var": "id"}, "xyz"]}, "postfix", "none"]}]}},
        "starts-with-non-string-flag": {"state": "ENABLED", "variants": {"true": "true", "false": "false", "fallback": "fallback"}, "defaultVariant": "fallback",
          "targeting": {"starts_with": [{"var": "num"}, "abc"]}},
        "ends-with-wrong-args-flag": {"state": "ENABLED", "variants": {"true": "true", "false": "false", "fallback": "fallback"}, "defaultVariant": "fallback",
          "targeting": {"ends_with": ["abc"]}},
        "equal-greater-lesser-version-flag": {"state": "ENABLED", "variants": {"equal": "equal", "greater": "greater", "lesser": "lesser", "none": "none"}, "defaultVariant": "none",
          "targeting": {"if": [{"sem_ver": [{"var": "version"}, "=", "2.0.0"]}, "equal",
            {"if": [{"sem_ver": [{"var": "version"}, ">", "2.0.0"]}, "greater", {"if": [{"sem_ver": [{"var": "version"}, "<", "2.0.0"]}, "lesser", "none"]}]}]}},
        "major-minor-version-flag": {"state": "ENABLED", "variants": {"minor": "minor", "major": "major", "none": "none"}, "defaultVariant": "none",
          "targeting": {"if": [{"sem_ver": [{"var": "version"}, "~", "3.0.0"]}, "minor", {"if": [{"sem_ver": [{"var": "version"}, "^", "3.0.0"]}, "major", "none"]}]}},
        "semver-invalid-version-flag": {"state": "ENABLED", "variants": {"match": "match", "no-match": "no-match", "fallback": "fallback"}, "defaultVariant": "fallback",
          "targeting": {"sem_ver": [{"var": "version"}, "=", "1.0.0"]}},
        "semver-invalid-operator-flag": {"state": "ENABLED", "variants": {"match": "match", "no-match": "no-match", "fallback": "fallback"}, "defaultVariant": "fallback",
          "targeting": {"sem_ver": [{"var": "version"}, "===", "1.0.0"]}},
        "semver-v-prefix-flag": {"state": "ENABLED", "variants": {"match": "match", "no-match": "no-match"}, "defaultVariant": "no-match",
          "targeting": {"if": [{"sem_ver": [{"var": "version"}, "=", "v1.0.0"]}, "match", "no-match"]}},
        "semver-partial-version-flag": {"state": "ENABLED", "variants": {"match": "match", "no-match": "no-match"}, "defaultVariant": "no-match",
          "targeting": {"if": [{"sem_ver": [{"var": "version"}, "^", "1"]}, "match", "no-match"]}},
        "semver-build-metadata-flag": {"state": "ENABLED", "variants": {"match": "match", "no-match": "no-match"}, "defaultVariant": "no-match",
          "targeting": {"if": [{"sem_ver": [{"var": "version"}, "=", "1.0.0+build"]}, "match", "no-match"]}},
        "targeting-key-flag": {"state": "ENABLED", "variants": {"miss": "miss", "hit": "hit"}, "defaultVariant": "miss",
          "targeting": {"if": [{"==": [{"var": "targetingKey"}, "5c3d8535-f81a-4478-a6d3-afaa4d51199e"]}, "hit", null]}},
        "metadata-flag": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "on",
          "metadata": {"string": "1.0.2", "integer": 2, "boolean": true, "float": 0.1}}
      },
      "$evaluators": {
        "is_ballmer": {"==": ["ballmer@macrosoft.com", {"var": ["email"]}]},
        "is_privileged": {"or": [{"$ref": "is_ballmer"}, {"==": [{"var": "role"}, "admin"]}]}
      },
      "metadata": {"flagSetId": "testbed", "version": "1", "string": "from the set"}
    }
    """#

    static let definitions = try! FlagdDefinitions.parse(Array(document.utf8))
    static let legacy = try! FlagdDefinitions.parse(Array(document.utf8), bucketing: .legacyPercent)
    let at = Date(timeIntervalSince1970: 1_750_000_000)

    func entry(_ key: String, _ context: EvaluationContext = .anonymous, legacy: Bool = false) -> FlagEntry? {
        (legacy ? Self.legacy : Self.definitions).evaluate(flag: key, for: context, at: at)
    }

    func user(_ name: String) -> EvaluationContext { EvaluationContext(attributes: ["user": ["name": .string(name)]]) }

    @Test func theDocumentHasOnlyTheIntendedProblem() {
        #expect(Self.definitions.problems.map(\.path) == ["flags.ref-to-nonexistent-evaluator-flag.targeting.if[0].$ref"])
    }

    @Test func staticValuesOfEveryType() {
        #expect(entry("boolean-flag")?.value == true)
        #expect(entry("string-flag")?.value == "hi")
        #expect(entry("integer-flag")?.value == 10)
        #expect(entry("float-flag")?.value == 0.5)
        #expect(entry("object-flag")?.value == ["showImages": true, "title": "Check out these pics!", "imagesPerPage": 100])
        #expect(entry("boolean-flag")?.reason == .static && entry("boolean-flag")?.variant == "on")
    }

    @Test func numbersKeepTheirPrecisionAndForm() {
        #expect(entry("large-integer-flag")?.value == .int(2_147_483_647))
        #expect(entry("huge-integer-flag")?.value == .int(9_007_199_254_740_991))
        #expect(entry("integral-float-flag")?.value == .double(10.0))
    }

    @Test func noDefaultVariantMeansTheCodeDefault() {
        #expect(entry("null-default-flag") == FlagEntry(value: nil, reason: .default, metadata: Self.definitions.metadata))
        #expect(entry("undefined-default-flag")?.value == nil && entry("undefined-default-flag")?.reason == .default)
        let wozniak = EvaluationContext(attributes: ["email": "wozniak@orange.com"])
        let jobs = EvaluationContext(attributes: ["email": "jobs@orange.com"])
        #expect(entry("no-default-flag-null-targeting-variant", wozniak)?.reason == .default)
        #expect(entry("no-default-flag-null-targeting-variant", wozniak)?.value == nil)
        #expect(entry("no-default-flag-null-targeting-variant", jobs)?.value == "CEO")
        #expect(entry("no-default-flag-null-targeting-variant", jobs)?.reason == .targetingMatch)
        #expect(entry("no-default-flag-undefined-targeting-variant", wozniak)?.reason == .default)
    }

    @Test func aDisabledFlagHasNoValueAndSaysDisabled() {
        #expect(entry("disabled-flag")?.value == nil)
        #expect(entry("disabled-flag")?.reason == .disabled)
        #expect(entry("disabled-flag")?.errorCode == nil)
    }

    @Test func aMissingFlagIsNotFound() {
        #expect(entry("missing-flag") == nil)
        #expect(Self.definitions.evaluate(for: .anonymous, at: at)["missing-flag"] == nil)
    }

    @Test func sharedEvaluatorsAndNestedReferences() {
        let ballmer = EvaluationContext(attributes: ["email": "ballmer@macrosoft.com"])
        #expect(entry("some-email-targeted-flag", ballmer)?.value == "hi")
        #expect(entry("nested-ref-targeted-flag", ballmer)?.value == "privileged")
        #expect(entry("nested-ref-targeted-flag", EvaluationContext(attributes: ["role": "admin"]))?.value == "privileged")
        #expect(entry("nested-ref-targeted-flag", EvaluationContext(attributes: ["email": "other@example.com"]))?.value == "standard")
        #expect(entry("ref-to-nonexistent-evaluator-flag")?.errorCode == .parseError)
        #expect(entry("ref-to-nonexistent-evaluator-flag")?.value == nil)
    }

    @Test(arguments: [("jack", "hearts"), ("queen", "spades"), ("ten", "clubs"), ("nine", "diamonds"), ("3", "clubs")])
    func fractionalHighPrecision(name: String, expected: String) {
        #expect(entry("fractional-flag", user(name))?.value == .string(expected))
        #expect(entry("fractional-flag", user(name))?.reason == .targetingMatch)
    }

    @Test(arguments: [("jack", "spades"), ("queen", "clubs"), ("ten", "diamonds"), ("nine", "hearts"), ("3", "diamonds")])
    func fractionalLegacyPercent(name: String, expected: String) {
        #expect(entry("fractional-flag", user(name), legacy: true)?.value == .string(expected))
    }

    @Test func fractionalShorthandBucketsOnFlagKeyAndTargetingKey() {
        for legacy in [false, true] {
            #expect(entry("fractional-flag-shorthand", EvaluationContext(targetingKey: "jon@company.com"), legacy: legacy)?.value == "heads")
            #expect(entry("fractional-flag-shorthand", EvaluationContext(targetingKey: "jane@company.com"), legacy: legacy)?.value == "tails")
        }
    }

    @Test func aSharedSeedGivesTwoFlagsTheSameBuckets() {
        let v2: [(String, String, String)] = [
            ("seven", "hearts", "ace-of-hearts"), ("eight", "diamonds", "ace-of-diamonds"),
            ("nine", "clubs", "ace-of-clubs"), ("two", "spades", "ace-of-spades"),
        ]
        for (name, a, b) in v2 {
            #expect(entry("fractional-flag-A-shared-seed", user(name))?.value == .string(a))
            #expect(entry("fractional-flag-B-shared-seed", user(name))?.value == .string(b))
        }
        let v1: [(String, String, String)] = [
            ("jack", "hearts", "ace-of-hearts"), ("queen", "spades", "ace-of-spades"),
            ("ten", "hearts", "ace-of-hearts"), ("nine", "diamonds", "ace-of-diamonds"),
        ]
        for (name, a, b) in v1 {
            #expect(entry("fractional-flag-A-shared-seed", user(name), legacy: true)?.value == .string(a))
            #expect(entry("fractional-flag-B-shared-seed", user(name), legacy: true)?.value == .string(b))
        }
    }

    @Test(arguments: [("ejOoVL", "lower"), ("bY9fO-", "lower"), ("SI7p-", "lower"), ("6LvT0", "upper"), ("ceQdGm", "upper")])
    func fractionalHashEdges(key: String, expected: String) {
        #expect(entry("fractional-hash-edge-flag", EvaluationContext(targetingKey: key))?.value == .string(expected))
    }

    @Test func fractionalWithNestedRules() {
        func context(_ key: String, _ name: String, _ value: String?) -> EvaluationContext {
            EvaluationContext(targetingKey: key, attributes: value.map { [name: .string($0)] } ?? [:])
        }
        #expect(entry("fractional-nested-if-flag", context("jon@company.com", "tier", "premium"))?.value == "premium")
        #expect(entry("fractional-nested-if-flag", context("jon@company.com", "tier", "basic"))?.value == "standard")
        #expect(entry("fractional-nested-if-flag", context("user1", "tier", "premium"))?.value == "standard")
        #expect(entry("fractional-nested-var-flag", context("jon@company.com", "color", "red"))?.value == "red")
        #expect(entry("fractional-nested-var-flag", context("jon@company.com", "color", "green"))?.value == "green")
        #expect(entry("fractional-nested-var-flag", context("user1", "color", "red"))?.value == "blue")
        // A variant the flag does not have is an error: the code default.
        #expect(entry("fractional-nested-var-flag", context("jon@company.com", "color", "yellow"))?.errorCode == .general)
        #expect(entry("fractional-nested-var-flag", context("jon@company.com", "color", "yellow"))?.value == nil)
        #expect(entry("fractional-nested-var-flag", context("jon@company.com", "color", ""))?.value == nil)
        for key in ["jon@company.com", "user1"] {
            #expect(entry("fractional-nested-weight-flag", context(key, "tier", "premium"))?.value == "red")
            #expect(entry("fractional-nested-weight-flag", context(key, "tier", "basic"))?.value == "blue")
        }
        let someone = EvaluationContext(targetingKey: "some-targeting-key")
        #expect(entry("fractional-as-condition-flag", someone)?.value == "hundreds")
        #expect(entry("fractional-as-condition-false-flag", someone)?.value == "ones")
    }

    @Test func fractionalWithoutABucketingValue() {
        // One bucket answers for any value, but there must be one: without a targeting key the
        // operation is null and the default variant is served (flagd's test bed 3.9).
        #expect(entry("fractional-single-entry-flag", EvaluationContext(targetingKey: "some-targeting-key"))?.value == "single")
        #expect(entry("fractional-single-entry-flag")?.value == "fallback")
        #expect(entry("fractional-single-entry-flag")?.reason == .default)
        #expect(entry("fractional-null-bucket-key-flag")?.value == "fallback")
        #expect(entry("fractional-null-bucket-key-flag")?.reason == .default)
    }

    @Test(arguments: [("abcdef", "prefix"), ("uvwxyz", "postfix"), ("abcxyz", "prefix"), ("lmnopq", "none")])
    func startsAndEndsWith(id: String, expected: String) {
        #expect(entry("starts-ends-flag", EvaluationContext(attributes: ["id": .string(id)]))?.value == .string(expected))
    }

    @Test func stringOperatorsGiveNullOnBadInput() {
        let number = EvaluationContext(attributes: ["num": 123])
        #expect(entry("starts-with-non-string-flag", number)?.value == "fallback")
        #expect(entry("starts-with-non-string-flag", number)?.reason == .default)
        #expect(entry("ends-with-wrong-args-flag")?.value == "fallback")
        #expect(entry("ends-with-wrong-args-flag")?.reason == .default)
    }

    @Test(arguments: [("2.0.0", "equal"), ("2.1.0", "greater"), ("1.9.0", "lesser"), ("2.0.0-alpha", "lesser"), ("2.0.0.0", "none")])
    func semanticVersionOrder(version: String, expected: String) {
        #expect(entry("equal-greater-lesser-version-flag", EvaluationContext(attributes: ["version": .string(version)]))?.value == .string(expected))
    }

    @Test func semanticVersionRangesAndEdges() {
        func version(_ flag: String, _ text: String) -> FlagValue? {
            entry(flag, EvaluationContext(attributes: ["version": .string(text)]))?.value
        }
        #expect(version("major-minor-version-flag", "3.0.1") == "minor")
        #expect(version("major-minor-version-flag", "3.1.0") == "major")
        #expect(version("major-minor-version-flag", "4.0.0") == "none")
        #expect(version("semver-invalid-version-flag", "not-a-version") == "fallback")
        #expect(version("semver-invalid-operator-flag", "1.0.0") == "fallback")
        #expect(version("semver-v-prefix-flag", "1.0.0") == "match")
        #expect(version("semver-v-prefix-flag", "v1.0.0") == "match")
        #expect(version("semver-v-prefix-flag", "2.0.0") == "no-match")
        #expect(version("semver-partial-version-flag", "1.5.0") == "match")
        #expect(version("semver-partial-version-flag", "1.0.0") == "match")
        #expect(version("semver-partial-version-flag", "2.0.0") == "no-match")
        #expect(version("semver-build-metadata-flag", "1.0.0") == "match")
        #expect(version("semver-build-metadata-flag", "1.0.0+other") == "match")
        #expect(version("semver-build-metadata-flag", "2.0.0") == "no-match")
    }

    @Test func targetingKeyIsInTheContext() {
        let hit = entry("targeting-key-flag", EvaluationContext(targetingKey: "5c3d8535-f81a-4478-a6d3-afaa4d51199e"))
        #expect(hit?.value == "hit" && hit?.reason == .targetingMatch)
        let miss = entry("targeting-key-flag", EvaluationContext(targetingKey: "f20bd32d-703b-48b6-bc8e-79d53c85134a"))
        #expect(miss?.value == "miss" && miss?.reason == .default)
    }

    @Test func metadataMergesTheSetsAndTheFlags() {
        let metadata = entry("metadata-flag")?.metadata
        #expect(metadata?["string"] == "1.0.2")
        #expect(metadata?["integer"] == 2 && metadata?["boolean"] == true && metadata?["float"] == 0.1)
        #expect(metadata?["flagSetId"] == "testbed" && metadata?["version"] == "1")
        #expect(entry("boolean-flag")?.metadata["string"] == "from the set")
        #expect(Self.definitions.version == "1")
    }
}
