import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
@testable import FlagCtlCore

/// flagd rule files against flagd's own published schema (`FlagdSchemaCheck`): what `lint`
/// reports and `serve` warns about, beyond the format checks of the flagd module.
@Suite("flagd's schema")
struct FlagdSchemaTests {
    /// A document with one string flag whose targeting is `rule`.
    static func document(targeting rule: String) -> String {
        #"{"flags": {"f": {"state": "ENABLED", "variants": {"a": "a", "b": "b"}, "defaultVariant": "a", "targeting": \#(rule)}}, "$evaluators": {"shared": {"==": [1, 1]}}}"#
    }

    static func departures(_ text: String, besides reported: [FlagViolation] = []) throws -> [String] {
        try FlagdSchemaCheck.check(FlagJSON.parse(text), besides: reported).departures.map(\.description)
    }

    /// Rules flagd's schema refuses, though flagd (and this library) evaluate them: one case for
    /// each kind of constraint in `targeting.json` that the format checks do not already make.
    @Test(arguments: [
        (#"{"fractional": [["a", 25], ["b", 25.5]]}"#, #"flags.f.targeting.fractional[1][1]: is 25.5, expected a whole number"#),
        (#"{"fractional": [["a", 25], ["b", "25"]]}"#, #"flags.f.targeting.fractional[1][1]: is "25", expected a whole number"#),
        (#"{"fractional": [["a", 25], ["b", -25]]}"#, #"flags.f.targeting.fractional[1][1]: is -25, less than the minimum 0"#),
        (#"{"fractional": ["invalid", ["a", 25], ["b", 25]]}"#, #"flags.f.targeting.fractional[0]: is "invalid", expected an object"#),
        (#"{"fractional": [["a", 25, 1]]}"#, #"flags.f.targeting.fractional[0]: has 3 items, at most 2 allowed"#),
        (#"{"if": [{"starts_with": [{"var": "id"}, 0]}, "a", "b"]}"#, #"flags.f.targeting.if[0].starts_with[1]: is 0, expected a string"#),
        (#"{"if": [{"ends_with": [{"var": "id"}]}, "a", "b"]}"#, #"flags.f.targeting.if[0].ends_with: has 1 item, at least 2 needed"#),
        (#"{"if": [{"==": [{"var": "$flagd.invalidProp"}, 1]}, "a", "b"]}"#,
         #"flags.f.targeting.if[0].==[0].var: is "$flagd.invalidProp", not a property flagd injects ($flagd.timestamp, $flagd.flagKey)"#),
        (#"{"if": [{"sem_ver": [{"var": "v"}, "*", "2.0.0"]}, "a", "b"]}"#,
         #"flags.f.targeting.if[0].sem_ver[1]: is "*", expected one of "=", "!=", ">", "<", ">=", "<=", "~", "^""#),
        (#"{"if": [{"sem_ver": [{"var": "v"}, "=", "v2.0.0"]}, "a", "b"]}"#,
         #"flags.f.targeting.if[0].sem_ver[2]: is "v2.0.0", not a version as semver.org writes it (MAJOR.MINOR.PATCH, no leading v)"#),
        (#"{"if": [{">": [3, 2, 1]}, "a", "b"]}"#, #"flags.f.targeting.if[0].>: has 3 items, at most 2 allowed"#),
        (#"{"if": [{"missing_some": [1]}, "a", "b"]}"#, #"flags.f.targeting.if[0].missing_some: has 1 item, at least 2 needed"#),
        (#"{"if": [{"==": [1, {"x": 1}]}, "a", "b"]}"#, #"flags.f.targeting.if[0].==[1]: has "x", which is not allowed here"#),
    ])
    func aRuleOutsideTheSchemaIsADeparture(rule: String, expected: String) throws {
        #expect(try Self.departures(Self.document(targeting: rule)) == [expected])
    }

    /// Rules within the schema — flagd's own operators in each of their written forms — pass.
    @Test(arguments: [
        #"{"fractional": [["a", 50], ["b", 50]]}"#,
        #"{"fractional": [{"cat": [{"var": "$flagd.flagKey"}, {"var": "email"}]}, ["a", {"-": [{"var": "$flagd.timestamp"}, 1740000000]}], ["b", 100]]}"#,
        #"{"fractional": [["a"], [true, 1], [1, 1], [{"fractional": [["a", 1], ["b", 1]]}, 1]]}"#,
        #"{"if": [{"sem_ver": [{"var": "version"}, "^", "1.2.3-beta.1+build.7"]}, "a", "b"]}"#,
        #"{"if": [{"starts_with": [{"var": "id"}, "abc"]}, "a", {"if": [{"ends_with": [{"var": "id"}, "xyz"]}, "b", null]}]}"#,
        #"{"if": [{"$ref": "shared"}]}"#,
        #"{"if": [{"<": [1, {"var": ["n", 0]}, 3]}, "a", "b"]}"#,
        #"{"!": true}"#,
        #"{}"#,
    ])
    func aRuleWithinTheSchemaPasses(rule: String) throws {
        #expect(try Self.departures(Self.document(targeting: rule)) == [])
    }

    /// The flag level: types, states, metadata and keys, in both of flagd's forms of `flags`.
    @Test func flagsAndMetadataAreCheckedInBothForms() throws {
        #expect(try Self.departures(#"{"flags": [{"key": "a", "state": "ENABLED", "variants": {"on": true}, "defaultVariant": "on"}]}"#) == [])
        #expect(try Self.departures(#"{"flags": [{"key": "", "state": "ENABLED", "variants": {"on": true}}]}"#) == [#"flags[0].key: is "", shorter than 1 character"#])
        #expect(try Self.departures(#"{"flags": {"a": {"state": "ENABLED", "variants": {"on": true}, "defaultVariant": 1}}}"#)
            == [#"flags.a.defaultVariant: is 1, expected a string or null"#])
        #expect(try Self.departures(#"{"flags": {}, "metadata": {"version": ["1"]}}"#) == [#"metadata.version: is a list, expected a string, a number or a Boolean"#])
        #expect(try Self.departures(#"{"metadata": {}}"#) == [#"flags: is required"#])
    }

    /// A fault the format checks already name is said once, in their words: departures under a
    /// flag (or evaluator, or member) they reported are left out; other flags' are kept.
    @Test func aFaultTheFormatChecksNameIsNotSaidTwice() throws {
        let text = #"{"flags": {"a": {"state": "ON", "variants": {"on": true}, "targeting": {"fractional": [["on", -1]]}}, "b": {"state": "ENABLED", "variants": {"on": true}, "targeting": {"fractional": [["on", -1]]}}}}"#
        let all = try Self.departures(text)
        #expect(all.count == 3, "\(all)")
        let left = try Self.departures(text, besides: [FlagViolation(path: "flags.a.state", message: "is \"ON\"")])
        #expect(left == [#"flags.b.targeting.fractional[0][1]: is -1, less than the minimum 0"#])
        #expect(FlagdSchemaCheck.enclosing("flags.a[1].b") == ["flags.a[1].b", "flags.a[1]", "flags.a", "flags"])
        // A key the schema refuses is a fault of its own, not of `flags` as a whole.
        let key = #"{"flags": {"a\n": {"state": "ENABLED", "variants": {"on": true}}, "b": {"state": "ON", "variants": {"on": true}}}}"#
        #expect(try Self.departures(key, besides: [FlagViolation(path: "flags.b.state", message: "is \"ON\"")]) == [#"flags: has "a\n", which is not allowed here"#])
        #expect(try Self.departures(key, besides: [FlagViolation(path: "flags.a\n.state", message: "…")]).count == 1, "b's state is still said")
    }

    /// `lint` fails a file with departures and names the schema's release; `lint` of the
    /// library's own rule files passes.
    @Test func lintReportsDeparturesAsViolations() throws {
        let report = LintCommand.lint(Array(Self.document(targeting: #"{"fractional": [["a", 1.5], ["b", 1]]}"#).utf8), schema: nil)
        #expect(report.violations.map(\.description) == [
            #"flags.f.targeting.fractional[0][1]: is 1.5, expected a whole number (flagd's schema 0.2.15)"#,
        ])
        #expect(LintCommand.lint(Array(DemoCommand.localRules.utf8), schema: nil).violations.isEmpty)
    }

    /// `serve` serves such a file as flagd does, and says what flagd's schema refuses.
    @Test func serveWarnsAboutDeparturesAndServesTheFile() async throws {
        let serve = try await ServeRun.start(["--port", "0"], text: Self.document(targeting: #"{"fractional": [["a", -1], ["b", 1]]}"#))
        #expect(await serve.stop() == 0)
        #expect(serve.captured.out.contains { $0.hasPrefix("serving flagd definitions") })
        #expect(serve.captured.err.contains { $0.hasSuffix("flags.f.targeting.fractional[0][1]: is -1, less than the minimum 0 (flagd's schema; evaluated as flagd evaluates it)") },
                "\(serve.captured.err)")
    }

    /// A hostile file cannot hold the check: nested alternatives are counted against a budget,
    /// and an exhausted budget leaves the file unchecked (`lint` says so) rather than waiting.
    @Test func aHostileFileExhaustsTheBudgetNotTheMachine() throws {
        // Both forms of `fractional` (with and without a bucketing value) check the buckets after
        // the first: each level doubles the work of the one inside it.
        var rule = #"{"fractional": [["a", 1], ["b", 1]]}"#
        for _ in 0..<18 { rule = #"{"fractional": [["a", 1], [\#(rule), 1]]}"# }
        let text = Self.document(targeting: rule)
        let report = LintCommand.lint(Array(text.utf8), schema: nil)
        #expect(report.violations.isEmpty && report.flags == 1)
        #expect(report.warnings.contains { $0.hasPrefix("too deeply nested to check against flagd's schema") }, "\(report.warnings)")
        let budget = FlagdSchemaCheck.budget(for: try FlagJSON.parse(text))
        #expect(budget < 2_000_000, "a small file's budget: \(budget) steps")
        #expect(try FlagdSchemaCheck.check(FlagJSON.parse(text), besides: [], budget: 10).unchecked)
    }

    /// Patterns read as ECMA-262 reads them, not as ICU would: `$` is the end of the text,
    /// `\d` an ASCII digit, `.` anything but a line terminator.
    @Test func patternsAreReadAsECMAScriptReadsThem() throws {
        #expect(try Self.departures(#"{"flags": {"a\n": {"state": "ENABLED", "variants": {"on": true}}}}"#) == [#"flags: has "a\n", which is not allowed here"#])
        #expect(try Self.departures(Self.document(targeting: #"{"sem_ver": [{"var": "v"}, "=", "١.٠.٠"]}"#)).count == 1)
        #expect(try Self.departures(#"{"flags": {"\u000b": {"state": "ENABLED", "variants": {"on": true}}}}"#) == [])
        #expect(try Self.departures(#"{"flags": {"\n": {"state": "ENABLED", "variants": {"on": true}}}}"#) == [#"flags: has "\n", which is not allowed here"#])
        #expect(JSONSchemaValidator.icuPattern(#"^[\d.]+\.\d$"#) == #"^[0-9.]+\.[0-9]\z"#)
    }

    /// The embedded documents parse and every `$ref` in them resolves.
    @Test func theEmbeddedSchemaIsWhole() throws {
        let documents = try FlagdSchemaDocuments.texts.mapValues { try FlagJSON.parse($0) }
        #expect(Set(documents.keys) == ["flagd.json", "flags.json", "targeting.json"])
        let validator = JSONSchemaValidator(documents: documents, root: "flagd.json", budget: 1)
        #expect(validator.unresolved.isEmpty, "\(validator.unresolved)")
        let broken = JSONSchemaValidator(documents: ["a.json": ["$ref": "./b.json#/definitions/x"]], root: "a.json", budget: 1)
        #expect(broken.unresolved == ["b.json#/definitions/x"])
    }

    /// The validator's other keywords, on a schema of their own: each failure is said in words
    /// (flagd's schemas use them only where the format checks speak first).
    @Test func everyKindOfFailureIsSaidInWords() throws {
        let schema: FlagValue = [
            "type": "object",
            "properties": [
                "never": false,
                "either": ["oneOf": [["type": "integer"], ["type": "number"]]],
                "notText": ["not": ["type": "string"]],
                "some": ["type": "object", "minProperties": 2],
                "many": ["type": "array", "maxItems": 1],
            ],
            "required": ["needed"],
        ]
        var validator = JSONSchemaValidator(documents: ["s.json": schema], root: "s.json", budget: 1_000)
        let instance: FlagValue = ["never": 1, "either": 3, "notText": "x", "some": ["a": 1], "many": [1, 2]]
        let said = try validator.validate(instance).map { "\(FlagdSchemaCheck.render($0.path)): \(validator.message($0))" }
        #expect(said.sorted() == [
            #"either: matches 2 of the schema's alternatives; exactly one is allowed"#,
            "many: has 2 items, at most 1 allowed",
            "needed: is required",
            "never: is not allowed here",
            #"notText: is "x", a form the schema excludes"#,
            "some: has 1 member, at least 2 needed",
        ])
    }

    /// Off by default: `FLAGD_SCHEMA_CASES=cases.jsonl FLAGD_SCHEMA_OUT=out.jsonl` writes, for each
    /// document of the input (one per line), whether it passes and its departures' paths — for
    /// comparing with another validator (Docs/Providers.md says how it was done).
    @Test(.enabled(if: ProcessInfo.processInfo.environment["FLAGD_SCHEMA_CASES"] != nil))
    func verdictsForAnotherValidator() throws {
        let environment = ProcessInfo.processInfo.environment
        let input = try String(contentsOfFile: environment["FLAGD_SCHEMA_CASES"]!, encoding: .utf8)
        var lines: [String] = []
        for line in input.split(separator: "\n") {
            let result = try FlagdSchemaCheck.check(FlagJSON.parse(String(line)), besides: [])
            let verdict: FlagValue = result.unchecked ? "unchecked" : .bool(result.departures.isEmpty)
            lines.append(FlagJSON.string(["valid": verdict, "paths": .list(result.departures.map { .string($0.path) })], sortedKeys: true))
        }
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: environment["FLAGD_SCHEMA_OUT"] ?? "/dev/stdout"))
    }
}
