import Foundation
import Testing
@testable import FeatureFlags
@testable import FeatureFlagsFlagd

/// Every JsonLogic operator the evaluator knows, with the cases where implementations
/// disagree decided as flagd's are (and noted in Docs/Providers.md).
@Suite("JsonLogic")
struct JsonLogicTests {
    let context: [String: FlagValue] = [
        "targetingKey": "user-1", "email": "ana@example.com", "age": 42, "score": 7.5, "tier": "gold",
        "tags": ["a", "b"], "user": ["name": "Ana", "roles": ["admin", "dev"]], "empty": "", "zero": 0, "none": .null,
        "$flagd": ["flagKey": "spoofed"],
    ]

    func run(_ rule: String, data: FlagValue? = nil) throws -> FlagValue {
        var compiler = LogicCompiler(evaluators: [:])
        let compiled = try compiler.compile(try FlagJSON.parse(rule), at: "rule")
        let scope = LogicScope(context: context, flagKey: "my-flag", timestamp: 1_750_000_000, bucketing: .highPrecision, budget: EvaluationBudget())
        return scope.evaluate(compiled, data: data.map { .value($0) } ?? .root)
    }

    /// Why `rule` fails where flagd's evaluator fails; nil when it evaluates.
    func failure(_ rule: String) throws -> String? {
        var compiler = LogicCompiler(evaluators: [:])
        let compiled = try compiler.compile(try FlagJSON.parse(rule), at: "rule")
        let budget = EvaluationBudget()
        let scope = LogicScope(context: context, flagKey: "my-flag", timestamp: 1_750_000_000, bucketing: .highPrecision, budget: budget)
        _ = scope.evaluate(compiled)
        return budget.failure
    }

    @Test func variables() throws {
        #expect(try run(#"{"var": "email"}"#) == "ana@example.com")
        #expect(try run(#"{"var": ["user.name"]}"#) == "Ana")
        #expect(try run(#"{"var": "user.roles.1"}"#) == "dev")
        #expect(try run(#"{"var": ["missing", "fallback"]}"#) == "fallback")
        #expect(try run(#"{"var": ["none", 3]}"#) == 3)
        #expect(try run(#"{"var": "missing"}"#) == .null)
        #expect(try run(#"{"var": 1}"#, data: ["x", "y"]) == "y")
        #expect(try run(#"{"var": ""}"#, data: 5) == 5)
        #expect(try run(#"{"var": {"cat": ["us", "er.name"]}}"#) == "Ana")
        // flagd's own values cannot be spoofed by the context.
        #expect(try run(#"{"var": "$flagd.flagKey"}"#) == "my-flag")
        #expect(try run(#"{"var": "$flagd.timestamp"}"#) == 1_750_000_000)
        #expect(try run(#"{"var": "targetingKey"}"#) == "user-1")
    }

    @Test func missingAndMissingSome() throws {
        #expect(try run(#"{"missing": ["email", "nope", "empty", "none"]}"#) == ["nope", "none"])
        #expect(try run(#"{"missing": [["age", "nope"]]}"#) == [])
        #expect(try run(#"{"missing_some": [1, ["email", "nope"]]}"#) == [])
        #expect(try run(#"{"missing_some": [2, ["email", "nope", "nix"]]}"#) == ["nope", "nix"])
    }

    /// `missing` reads each name as flagd's evaluator reads a `var`: absent or `null` is
    /// missing and `""` present; `[path, default]` with a default is never missing; a number
    /// is a path in its plain digits; a Boolean or object name fails the evaluation.
    @Test func missingReadsNamesAsFlagdsEvaluatorDoes() throws {
        #expect(try run(#"{"missing": ["empty"]}"#) == [])
        #expect(try run(#"{"missing": "empty"}"#) == [])
        #expect(try run(#"{"missing_some": [1, ["empty", "nope"]]}"#) == [])
        #expect(try run(#"{"missing": [["nope"]]}"#) == [["nope"]])
        #expect(try run(#"{"missing": [["nope", null]]}"#) == [["nope", .null]])
        #expect(try run(#"{"missing": [["nope", "d"]]}"#) == [])
        #expect(try run(#"{"missing": [null]}"#) == [.null])
        #expect(try run(#"{"missing": [1.5, 2]}"#, data: ["1": ["5": 2]]) == [2])
        #expect(try run(#"{"missing_some": [1.9, ["nope", "email"]]}"#) == [])
        #expect(try run(#"{"missing_some": [2, ["nope", "none", "email"]]}"#) == ["nope", "none"])
        #expect(try run(#"{"missing": [[]]}"#) == [], "an empty name list is the whole data: present")
        #expect(try failure(#"{"missing": [true]}"#) != nil)
        #expect(try failure(#"{"missing": [[1]]}"#) != nil)
        #expect(try failure(#"{"missing": [{"a": 1, "b": 2}]}"#) != nil)
        #expect(try run(#"{"var": 1e21}"#, data: ["1000000000000000000000": 3]) == 3)
    }

    @Test func conditions() throws {
        #expect(try run(#"{"if": [true, "yes", "no"]}"#) == "yes")
        #expect(try run(#"{"if": [false, "yes", "no"]}"#) == "no")
        #expect(try run(#"{"if": [false, "a", false, "b", "c"]}"#) == "c")
        #expect(try run(#"{"if": [false, "a", true, "b", "c"]}"#) == "b")
        #expect(try run(#"{"if": [false, "a"]}"#) == .null)
        #expect(try run(#"{"if": []}"#) == .null)
        #expect(try run(#"{"?:": [{"var": "zero"}, "a", "b"]}"#) == "b")
    }

    @Test func equality() throws {
        #expect(try run(#"{"==": [1, 1]}"#) == true)
        #expect(try run(#"{"==": [1, "1"]}"#) == true)
        #expect(try run(#"{"==": [0, false]}"#) == true)
        #expect(try run(#"{"==": [null, 0]}"#) == false)
        #expect(try run(#"{"==": [null, null]}"#) == true)
        #expect(try run(#"{"==": [1.0, 1]}"#) == true)
        #expect(try run(#"{"===": [1, "1"]}"#) == false)
        #expect(try run(#"{"===": [1, 1.0]}"#) == true)
        #expect(try run(#"{"!=": [1, 2]}"#) == true)
        #expect(try run(#"{"!=": [1, "1"]}"#) == false)
        #expect(try run(#"{"!==": [1, "1"]}"#) == true)
        #expect(try run(#"{"==": ["abc", "abc"]}"#) == true)
        #expect(try run(#"{"==": ["abc", "1"]}"#) == false)
    }

    /// Text is compared by its bytes, as flagd's Go evaluator (and its Java, JavaScript and
    /// Python ones) compare it — not by Swift's canonical equivalence, where "é" (U+00E9) and
    /// "e" + U+0301 are equal. Two evaluators of one rule file must agree on the same user.
    @Test func textComparesByItsBytesNotByCanonicalEquivalence() throws {
        let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
        #expect(composed == decomposed, "Swift's own == says equal")
        #expect(try run(#"{"==": ["caf\u00e9", "cafe\u0301"]}"#) == false)
        #expect(try run(#"{"===": ["caf\u00e9", "cafe\u0301"]}"#) == false)
        #expect(try run(#"{"!=": ["caf\u00e9", "cafe\u0301"]}"#) == true)
        #expect(try run(#"{"<=": ["cafe\u0301", "caf\u00e9"]}"#) == true, "less by bytes")
        #expect(try run(#"{">=": ["cafe\u0301", "caf\u00e9"]}"#) == false)
        #expect(try run(#"{"in": ["\u00e9", "cafe\u0301"]}"#) == false)
        #expect(try run(#"{"in": ["e", "cafe\u0301"]}"#) == true, "a substring of the bytes, not of the characters")
        #expect(try run(#"{"in": ["caf\u00e9", ["cafe\u0301"]]}"#) == false)
        #expect(try run(#"{"contains_any": [["caf\u00e9"], ["cafe\u0301"]]}"#) == false)
        #expect(try run(#"{"==": ["caf\u00e9", "caf\u00e9"]}"#) == true)

        var compiler = LogicCompiler(evaluators: [:])
        let lookup = try compiler.compile(try FlagJSON.parse(#"[{"var": "cafe\u0301"}, {"var": "m.cafe\u0301"}, {"var": "caf\u00e9"}]"#), at: "rule")
        let scope = LogicScope(
            context: [composed: 1, "m": [composed: 2]], flagKey: "f", timestamp: 0, bucketing: .highPrecision, budget: EvaluationBudget())
        #expect(scope.evaluate(lookup) == [.null, .null, 1], "a name finds only the member of its own bytes")
    }

    @Test func truthiness() throws {
        for falsy in ["0", "\"\"", "[]", "null", "false", "{}"] { #expect(try run(#"{"!!": [\#(falsy)]}"#) == false, "\(falsy)") }
        for truthy in ["1", "\"0\"", "[0]", "true", "-1", "\"a\"", "{\"a\": 1, \"b\": 2}"] {
            #expect(try run(#"{"!!": [\#(truthy)]}"#) == true, "\(truthy)")
        }
        #expect(try run(#"{"!": [""]}"#) == true)
        #expect(try run(#"{"!": "mike"}"#) == false)
        #expect(try run(#"{"or": [0, "", "x", "y"]}"#) == "x")
        #expect(try run(#"{"or": [0, false]}"#) == false)
        #expect(try run(#"{"and": [1, "a", 0, 2]}"#) == 0)
        #expect(try run(#"{"and": [1, "a"]}"#) == "a")
        #expect(try run(#"{"or": []}"#) == .null)
    }

    @Test func ordering() throws {
        #expect(try run(#"{"<": [1, 2]}"#) == true)
        #expect(try run(#"{"<": [2, 1]}"#) == false)
        #expect(try run(#"{"<": [1, 5, 10]}"#) == true)
        #expect(try run(#"{"<": [1, 10, 10]}"#) == false)
        #expect(try run(#"{"<=": [1, 1, 10]}"#) == true)
        #expect(try run(#"{"<=": [1, 11, 10]}"#) == false)
        #expect(try run(#"{">": [{"var": "age"}, 18]}"#) == true)
        #expect(try run(#"{">=": [1, 1]}"#) == true)
        #expect(try run(#"{"<": ["2", 10]}"#) == true)
        #expect(try run(#"{"<": ["b", "a"]}"#) == false)
        #expect(try run(#"{"<": ["10", "9"]}"#) == true)  // two strings compare as text
        #expect(try run(#"{"<": ["abc", 1]}"#) == false)  // NaN compares false
        #expect(try run(#"{">": ["abc", 1]}"#) == false)
        #expect(try run(#"{"<": [1]}"#) == false)
    }

    @Test func arithmetic() throws {
        #expect(try run(#"{"+": [1, 2, "3"]}"#) == 6)
        #expect(try run(#"{"+": [0.5, 1]}"#) == 1.5)
        #expect(try run(#"{"-": [5, 7]}"#) == -2)
        #expect(try run(#"{"-": [3]}"#) == -3)
        #expect(try run(#"{"*": [2, 3, 4]}"#) == 24)
        #expect(try run(#"{"/": [1, 4]}"#) == 0.25)
        #expect(try run(#"{"/": [1, 0]}"#) == .null)
        #expect(try run(#"{"%": [7, 3]}"#) == 1)
        #expect(try run(#"{"%": [7, 0]}"#) == .null)
        #expect(try run(#"{"max": [1, 3, 2]}"#) == 3)
        #expect(try run(#"{"min": [1, -3, 2]}"#) == -3)
        #expect(try run(#"{"max": []}"#) == .null)
        #expect(try run(#"{"+": ["x", 1]}"#) == 1)
    }

    /// Operands are converted as flagd's evaluator converts them: text that is no number is 0;
    /// a Boolean, `null`, a list or an object fails the evaluation (`PARSE_ERROR`), as there.
    @Test func arithmeticConvertsAsFlagdsEvaluatorDoes() throws {
        #expect(try run(#"{"+": ["x", 1]}"#) == 1)
        #expect(try run(#"{"*": ["Hey", 2]}"#) == 0)
        #expect(try run(#"{"-": ["hello", "1.5"]}"#) == -1.5)
        #expect(try run(#"{"+": ["1e3", " 2"]}"#) == 1000)
        for rule in [
            #"{"+": [true, 1]}"#, #"{"+": [null, 1]}"#, #"{"+": [[1], 1]}"#, #"{"*": [{"var": "user"}, 2]}"#,
            #"{"max": [1, false]}"#, #"{"min": [null]}"#, #"{"%": [true, 2]}"#, #"{"-": [null]}"#, #"{"/": [1, [2]]}"#,
            #"{"missing_some": [true, ["email"]]}"#, #"{"substr": ["abc", null]}"#, #"{"substr": [true, 1]}"#,
            #"{"substr": [["a"], 0]}"#, #"{"substr": ["abc"]}"#, #"{"substr": ["abc", 0, false]}"#,
            #"{"if": [{"==": [{"+": [{"var": "none"}, 1]}, 1]}, "on", "off"]}"#,
        ] {
            #expect(try failure(rule) != nil, "\(rule)")
        }
        #expect(try run(#"{"%": [7, 3, true]}"#) == 1)
        #expect(try run(#"{"substr": [1.5, 1]}"#) == ".5")
        #expect(try run(#"{"substr": [null, 0]}"#) == "")
        #expect(try run(#"{"substr": ["abcdef", 1, 2, 9]}"#) == "bcdef")
        #expect(try run(#"{"substr": ["abcdef", 1, 2]}"#) == "bc")
    }

    /// `-` and `/` take every argument left to right, as flagd's evaluator (and JsonLogic's
    /// current shared tests) do; JsonLogic's first implementation used two.
    @Test func arithmeticFoldsEveryArgument() throws {
        #expect(try run(#"{"-": [10, 2, 3]}"#) == 5)
        #expect(try run(#"{"-": [1, 2, 3, 4]}"#) == -8)
        #expect(try run(#"{"/": [8, 2, 2]}"#) == 2)
        #expect(try run(#"{"/": [8, 2, 0]}"#) == .null)
        #expect(try run(#"{"/": [4]}"#) == 4)
        #expect(try run(#"{"/": ["-1"]}"#) == -1)
        #expect(try run(#"{"*": []}"#) == 1)
        #expect(try run(#"{"-": []}"#) == 0)
        #expect(try run(#"{"/": []}"#) == 0)
        #expect(try failure(#"{"%": [7]}"#) != nil)
        #expect(try failure(#"{"%": []}"#) != nil)
        #expect(try failure(#"{"%": [7, 3]}"#) == nil)
    }

    /// Fewer than two arguments are never equal; "between" is exactly three arguments (with
    /// four, only the first two are compared).
    @Test func argumentCountsAsFlagdsEvaluatorReadsThem() throws {
        #expect(try run(#"{"==": []}"#) == false)
        #expect(try run(#"{"===": []}"#) == false)
        #expect(try run(#"{"!=": []}"#) == true)
        #expect(try run(#"{"!==": [1]}"#) == true)
        #expect(try run(#"{"==": [1]}"#) == false)
        #expect(try run(#"{"<": [1, 2, 0, 5]}"#) == true)
        #expect(try run(#"{"<=": [1, 2, 0]}"#) == false)
        #expect(try run(#"{">": [3, 2, 1, 9]}"#) == true)
    }

    /// One rule in place of the argument list: its value, when a list, is the argument list.
    @Test func oneRuleAsTheArgumentListGivesTheArguments() throws {
        let data: FlagValue = ["nums": [1, 5, 3], "parts": ["a", "b"], "pair": ["user.name", "x"], "none": [], "zero": [0]]
        #expect(try run(#"{"max": {"var": "nums"}}"#, data: data) == 5)
        #expect(try run(#"{"+": {"var": "nums"}}"#, data: data) == 9)
        #expect(try run(#"{"-": {"var": "nums"}}"#, data: data) == -7)
        #expect(try run(#"{"cat": {"var": "parts"}}"#, data: data) == "ab")
        #expect(try run(#"{"cat": {"merge": [["Hello "], ["World", "!"]]}}"#) == "Hello World!")
        #expect(try run(#"{"merge": {"var": "nums"}}"#, data: data) == [1, 5, 3])
        #expect(try run(#"{"!": {"var": "none"}}"#, data: data) == true)
        #expect(try run(#"{"!": {"var": "zero"}}"#, data: data) == true)
        #expect(try run(#"{"!!": {"var": "parts"}}"#, data: data) == true)
        #expect(try run(#"{"var": {"var": "pair"}}"#, data: data) == "x")
        #expect(try run(#"{"var": {"merge": ["user.name", "x"]}}"#) == "Ana")
        #expect(try run(#"{"var": {"merge": ["nowhere", "fallback"]}}"#) == "fallback")
        #expect(try run(#"{"in": {"merge": ["c", [["a", "b"]]]}}"#) == false)
        #expect(try run(#"{"in": {"merge": ["a", [["a", "b"]]]}}"#) == true)
        // A value that is not a list is the one argument, where the operator takes one.
        #expect(try run(#"{"!": {"var": "email"}}"#) == false)
        #expect(try run(#"{"abs": {"var": "age"}}"#) == 42)
        #expect(try run(#"{"var": {"cat": ["user", ".", "name"]}}"#) == "Ana")
    }

    /// A reference standing for a list is that list of arguments, as if written in place.
    @Test func aReferenceToAListIsTheArgumentList() throws {
        var compiler = LogicCompiler(evaluators: ["isGold": [["==": [["var": "tier"], "gold"]], "yes", "no"], "range": [1, 50]])
        let scope = LogicScope(context: context, flagKey: "my-flag", timestamp: 0, bucketing: .highPrecision, budget: EvaluationBudget())
        #expect(scope.evaluate(try compiler.compile(try FlagJSON.parse(#"{"if": {"$ref": "isGold"}}"#), at: "rule")) == "yes")
        #expect(scope.evaluate(try compiler.compile(try FlagJSON.parse(#"{"max": {"$ref": "range"}}"#), at: "rule")) == 50)
    }

    /// Where flagd's evaluator needs a list — the lazy operators always, the operators that
    /// index their arguments for a value given alone — the evaluation fails (`PARSE_ERROR`)
    /// instead of guessing.
    @Test func operatorsThatNeedAListFailOnOneValue() throws {
        for rule in [
            #"{"if": "apple"}"#, #"{"?:": 1}"#, #"{"and": true}"#, #"{"or": 5}"#, #"{"map": 5}"#, #"{"filter": 5}"#,
            #"{"reduce": 5}"#, #"{"all": 5}"#, #"{"some": 5}"#, #"{"none": 5}"#, #"{"and": {"var": "tags"}}"#,
            #"{"if": {"var": "tags"}}"#, #"{"<": 1}"#, #"{"<=": 1}"#, #"{">": 1}"#, #"{">=": 1}"#, #"{"==": 1}"#,
            #"{"!=": 1}"#, #"{"-": 1}"#, #"{"*": 1}"#, #"{"/": 2}"#, #"{"%": 1}"#, #"{"max": 1}"#, #"{"min": 1}"#,
            #"{"in": "a"}"#, #"{"substr": "abc"}"#, #"{"missing_some": 1}"#, #"{"cat": 5}"#, #"{"missing": 5}"#,
            #"{"<": {"var": "age"}}"#, #"{"max": {"var": "age"}}"#, #"{"cat": {"var": "age"}}"#,
        ] {
            #expect(try failure(rule) != nil, "\(rule)")
        }
        // `all`, `some` and `none` apply a rule; a plain value fails once there are elements.
        for rule in [#"{"all": [[1], true]}"#, #"{"some": [[1], null]}"#, #"{"none": [[1], [1]]}"#, #"{"some": [[1]]}"#] {
            #expect(try failure(rule) != nil, "\(rule)")
        }
        #expect(try run(#"{"all": [[], true]}"#) == false)
        #expect(try run(#"{"none": [[], null]}"#) == true)
        #expect(try run(#"{"some": [[1], {"a": 1, "b": 2}]}"#) == true)
        for rule in [
            #"{"var": {"==": [1, 1]}}"#, #"{"var": [{"merge": [["email"]]}, "d"]}"#, #"{"var": {"var": "user"}}"#,
            #"{"merge": {"var": "user"}}"#, #"{"merge": {"var": "none"}}"#, #"{"in": []}"#,
        ] {
            #expect(try failure(rule) != nil, "\(rule)")
        }
        #expect(try run(#"{"merge": "a"}"#) == ["a"])
        #expect(try run(#"{"in": ["a"]}"#) == false)
        #expect(try run(#"{"!": true}"#) == false)
        #expect(try run(#"{"cat": "x"}"#) == "x")
        #expect(try run(#"{"missing": "nowhere"}"#) == ["nowhere"])
        #expect(try run(#"{"abs": -3}"#) == 3)
        #expect(try run(#"{"+": "3"}"#) == 3)
        #expect(try run(#"{"===": 1}"#) == false)
        #expect(try failure(#"{"var": "email"}"#) == nil)
    }

    /// Every argument of an operator that does not evaluate lazily is evaluated, so one that
    /// fails fails the rule even where the operator does not use it; `if`, `and` and `or`
    /// stay lazy.
    @Test func everyArgumentIsEvaluatedAndItsFailureCounts() throws {
        for rule in [
            #"{"!": [true, {"cat": [false]}]}"#, #"{"==": [{"cat": [false]}]}"#, #"{"var": ["email", {"cat": [false]}]}"#,
            #"{"%": [7, 3, {"cat": [false]}]}"#, #"{"substr": ["abc", 1, 1, {"cat": [false]}]}"#,
            #"{"var": ["email", "x", {"cat": [false]}]}"#,
        ] {
            #expect(try failure(rule) != nil, "\(rule)")
        }
        #expect(try failure(#"{"if": [true, 1, {"cat": [false]}]}"#) == nil)
        #expect(try failure(#"{"or": [true, {"cat": [false]}]}"#) == nil)
        #expect(try failure(#"{"and": [false, {"cat": [false]}]}"#) == nil)
    }

    /// `var`'s default is the second of exactly two arguments; `missing_some` needs a list of
    /// names.
    @Test func defaultsAndNameListsAsFlagdsEvaluatorReadsThem() throws {
        #expect(try run(#"{"var": ["nowhere", "d"]}"#) == "d")
        #expect(try run(#"{"var": ["nowhere", "d", "e"]}"#) == .null)
        #expect(try failure(#"{"missing_some": [1, "email"]}"#) != nil)
        #expect(try failure(#"{"missing_some": [1]}"#) != nil)
        #expect(try run(#"{"missing_some": [1, ["email", "nowhere"]]}"#) == [])
    }

    /// Empty parts of a path are skipped, as flagd's evaluator skips them.
    @Test func emptyPathPartsAreSkipped() throws {
        #expect(try run(#"{"var": "user..name"}"#) == "Ana")
        #expect(try run(#"{"var": ".user.name"}"#) == "Ana")
        #expect(try run(#"{"var": "user.name."}"#) == "Ana")
        #expect(try run(#"{"var": ["user..nothing", "d"]}"#) == "d")
        #expect(try run(#"{"missing": ["user..name", "user..nothing"]}"#) == ["user..nothing"])
        // A computed number as a path is its text, split the same way.
        #expect(try run(#"{"var": {"+": [0.5, 1]}}"#, data: ["1": ["5": "deep"]]) == "deep")
    }

    @Test func stringsAndLists() throws {
        #expect(try run(#"{"in": ["Spring", "Springfield"]}"#) == true)
        #expect(try run(#"{"in": ["Illinois", "Springfield"]}"#) == false)
        #expect(try run(#"{"in": ["b", {"var": "tags"}]}"#) == true)
        #expect(try run(#"{"in": ["c", {"var": "tags"}]}"#) == false)
        #expect(try run(#"{"in": ["a", 5]}"#) == false)
        #expect(try run(#"{"cat": ["I love", " pie", 1, 2.5, null]}"#) == "I love pie12.5")
        #expect(try run(#"{"cat": [10.0]}"#) == "10")
        #expect(try run(#"{"substr": ["jsonlogic", 4]}"#) == "logic")
        #expect(try run(#"{"substr": ["jsonlogic", -5]}"#) == "logic")
        #expect(try run(#"{"substr": ["jsonlogic", 1, 3]}"#) == "son")
        #expect(try run(#"{"substr": ["jsonlogic", 4, -2]}"#) == "log")
        #expect(try run(#"{"substr": ["abc", 10]}"#) == "")
        #expect(try run(#"{"merge": [[1, 2], [3], 4]}"#) == [1, 2, 3, 4])
        #expect(try run(#"{"merge": []}"#) == [])
    }

    /// Numbers and mismatched types where operators compare, look up or concatenate, as flagd's
    /// Go evaluator (github.com/diegoholiveira/jsonlogic v3) treats them — each case one where
    /// JavaScript's JsonLogic answers otherwise.
    @Test func numbersAndTypesAsFlagdsEvaluatorTreatsThem() throws {
        // `cat`: numbers in fixed notation (no exponent), the joined text of two or more values
        // trimmed; a Boolean, list or object fails the evaluation.
        #expect(try run(#"{"cat": ["n=", 1e21]}"#) == "n=1000000000000000000000")
        #expect(try run(#"{"cat": ["n=", 0.0000001]}"#) == "n=0.0000001")
        #expect(try run(#"{"cat": ["n=", 1.5, -2, 0.1]}"#) == "n=1.5-20.1")
        #expect(try run(#"{"cat": ["  padded ", "text  "]}"#) == "padded text")
        #expect(try run(#"{"cat": ["  alone  "]}"#) == "  alone  ")
        #expect(try run(#"{"cat": []}"#) == "")
        for bad in ["true", "[1]", "{\"var\": \"user\"}"] {
            #expect(try failure(#"{"cat": ["a", \#(bad)]}"#)?.contains("cat") == true, "\(bad)")
        }
        #expect(try failure(#"{"cat": ["a", 1, null]}"#) == nil)
        // `==` and `===`: every JSON number is one type.
        #expect(try run(#"{"==": [1, 1.0]}"#) == true)
        #expect(try run(#"{"===": [1, 1.0]}"#) == true)
        #expect(try run(#"{"===": [2.5, 2.5]}"#) == true)
        #expect(try run(#"{"==": [true, "1"]}"#) == true)
        #expect(try run(#"{"==": [" 1", 1]}"#) == false, "text with blanks around it is no number")
        #expect(try run(#"{"==": ["", 0]}"#) == true)
        // Lists and objects are never equal, not even to the same content.
        #expect(try run(#"{"==": [[1], [1]]}"#) == false)
        #expect(try run(#"{"===": [[1], [1]]}"#) == false)
        #expect(try run(#"{"==": [{"var": "user"}, {"var": "user"}]}"#) == false)
        #expect(try run(#"{"==": [[1], 1]}"#) == false)
        #expect(try run(#"{"===": [null, null]}"#) == true)
        // Ordering: `<=` is "less or equal", so null is not <= 0; text by UTF-8 bytes.
        #expect(try run(#"{"<=": [null, 0]}"#) == false)
        #expect(try run(#"{"<": [null, 1]}"#) == true)
        #expect(try run(#"{">=": [0, null]}"#) == false)
        #expect(try run(#"{"<": ["\uff61", "\ud83d\ude00"]}"#) == true, "code point order, not UTF-16")
        #expect(try run(#"{">": [3, 2, 1]}"#) == true, "three arguments: between, descending")
        #expect(try run(#"{">": [3, 4, 1]}"#) == false)
        #expect(try run(#"{">=": [3, 3, 1]}"#) == true)
        #expect(try run(#"{"<=": [1, 1, 2]}"#) == true)
        // `in` a list: a numeric needle matches elements by number (text parsed, 0 if it is none);
        // a list element is an inclusive range; other needles match identical elements.
        #expect(try run(#"{"in": [1, [1.0, 2]]}"#) == true)
        #expect(try run(#"{"in": [1, ["1", "2"]]}"#) == true)
        #expect(try run(#"{"in": [0, ["abc"]]}"#) == true, "text that is no number counts as 0")
        #expect(try run(#"{"in": [5, [[1, 10]]]}"#) == true)
        #expect(try run(#"{"in": [11, [[1, 10]]]}"#) == false)
        #expect(try run(#"{"in": ["x", [[0, 2]]]}"#) == true, "text that is no number counts as 0 in a range too")
        #expect(try run(#"{"in": ["1", [1]]}"#) == false)
        #expect(try run(#"{"in": [true, [1, true]]}"#) == true)
        #expect(try run(#"{"in": [null, [1, null]]}"#) == true)
        #expect(try run(#"{"in": ["", "abc"]}"#) == true)
        // … and fails where flagd's evaluator fails before finding a match.
        #expect(try failure(#"{"in": [1, [true]]}"#) != nil)
        #expect(try failure(#"{"in": [1, [null]]}"#) != nil)
        #expect(try failure(#"{"in": [true, [[1, 2]]]}"#) != nil)
        #expect(try failure(#"{"in": [1, [[1]]]}"#) != nil)
        #expect(try failure(#"{"in": [1, "a1b"]}"#) != nil, "a number needle in text")
        #expect(try failure(#"{"in": [{"var": "user"}, [{"var": "user"}]]}"#) != nil)
        #expect(try failure(#"{"in": [1, [1, true]]}"#) == nil, "a match before the element flagd fails on")
    }

    /// The operators flagd's evaluator library adds to JsonLogic.
    @Test func theOperatorsFlagdsEvaluatorAdds() throws {
        #expect(try run(#"{"abs": -3}"#) == 3)
        #expect(try run(#"{"abs": [-2.5]}"#) == 2.5)
        #expect(try run(#"{"abs": ["-4"]}"#) == 4)
        #expect(try failure(#"{"abs": [true]}"#) != nil)
        #expect(try run(#"{"contains_all": [["a", "b", "c"], ["a", "b"]]}"#) == true)
        #expect(try run(#"{"contains_all": [["a", "b"], ["a", "b", "c"]]}"#) == false)
        #expect(try run(#"{"contains_all": [["a"], []]}"#) == true)
        #expect(try run(#"{"contains_all": [[1, 2.5], [1.0, 2.5]]}"#) == true)
        #expect(try run(#"{"contains_all": [{"var": "tags"}, ["a"]]}"#) == true)
        #expect(try run(#"{"contains_all": ["ab", ["a"]]}"#) == false)
        #expect(try run(#"{"contains_any": [["a", "b", "c"], ["x", "b"]]}"#) == true)
        #expect(try run(#"{"contains_any": [["a", "b", "c"], ["x", "y"]]}"#) == false)
        #expect(try run(#"{"contains_any": [[1], ["1"]]}"#) == false, "a number is not its text here")
        #expect(try run(#"{"contains_none": [["a", "b", "c"], ["x", "y"]]}"#) == true)
        #expect(try run(#"{"contains_none": [["a", "b", "c"], ["x", "b"]]}"#) == false)
        #expect(try run(#"{"contains_none": ["not a list", ["x"]]}"#) == true)
        #expect(try failure(#"{"contains_any": [[[1]], [[1]]]}"#) != nil)
    }

    @Test func aFailedEvaluationIsAParseErrorOfItsFlagAlone() throws {
        let document = #"""
            {"flags": {
              "broken": {"state": "ENABLED", "variants": {"a": "a", "b": "b"}, "defaultVariant": "a",
                         "targeting": {"if": [{"in": [1, {"var": "flags"}]}, "b", "a"]}},
              "fine": {"state": "ENABLED", "variants": {"a": "a", "b": "b"}, "defaultVariant": "a",
                       "targeting": {"if": [{"in": [1, {"var": "numbers"}]}, "b", "a"]}}
            }}
            """#
        let definitions = try FlagdDefinitions.parse(Array(document.utf8))
        let context = EvaluationContext(targetingKey: "u", attributes: ["flags": [true], "numbers": [1]])
        let entries = definitions.evaluate(for: context)
        #expect(entries["broken"]?.reason == .error)
        #expect(entries["broken"]?.errorCode == .parseError)
        #expect(entries["broken"]?.value == nil)
        #expect(entries["fine"]?.value == "b")
        // The budget starts clean for the next flag and the next evaluation.
        #expect(definitions.evaluate(flag: "fine", for: context)?.value == "b")
    }

    /// `reduce` as flagd's evaluator does it: 0 without an initial value or a list; the
    /// initial value's type (Boolean, number, text) is the accumulator's, each step converted
    /// to it; `null` elements skipped.
    @Test func reduceAsFlagdsEvaluatorDoesIt() throws {
        let sum = #"{"+": [{"var": "current"}, {"var": "accumulator"}]}"#
        #expect(try run(#"{"reduce": [[1, 2, 3], \#(sum)]}"#) == 0)
        #expect(try run(#"{"reduce": [{"var": "nowhere"}, \#(sum), 42]}"#) == 0)
        #expect(try run(#"{"reduce": [[1, null, 2], \#(sum), 0]}"#) == 3)
        #expect(try run(#"{"reduce": [["1", "2"], \#(sum), 0]}"#) == 3)
        #expect(try run(#"{"reduce": [[1, 2], {"cat": [{"var": "accumulator"}, {"var": "current"}]}, 0]}"#) == 12)
        #expect(try run(#"{"reduce": [[1, 2], {"cat": [{"var": "accumulator"}, {"var": "current"}]}, "x"]}"#) == "x12")
        #expect(try run(#"{"reduce": [[1, 0], {"var": "current"}, true]}"#) == false)
        #expect(try run(#"{"reduce": [[1], {"var": "valueType"}, "t"]}"#) == "string")
        #expect(try run(#"{"reduce": [{"var": "tags"}, {"cat": [{"var": "accumulator"}, {"var": "current"}]}, ""]}"#) == "ab")
        for rule in [
            #"{"reduce": [[1], \#(sum), null]}"#, #"{"reduce": [[1], \#(sum), [0]]}"#, #"{"reduce": [[1], \#(sum), {"var": "user"}]}"#,
            #"{"reduce": [[true], {"var": "current"}, 0]}"#, #"{"reduce": [[[1]], {"var": "current"}, ""]}"#,
            #"{"reduce": [[1], 5, 0]}"#, #"{"reduce": [{"var": "email"}, \#(sum), 0]}"#,
        ] {
            #expect(try failure(rule) != nil, "\(rule)")
        }
        #expect(try run(#"{"reduce": [[], 5, 0]}"#) == 0)
    }

    @Test func arrayOperations() throws {
        #expect(try run(#"{"map": [[1, 2, 3], {"*": [{"var": ""}, 2]}]}"#) == [2, 4, 6])
        #expect(try run(#"{"filter": [[1, 2, 3, 4], {"%": [{"var": ""}, 2]}]}"#) == [1, 3])
        #expect(try run(#"{"reduce": [[1, 2, 3], {"+": [{"var": "current"}, {"var": "accumulator"}]}, 10]}"#) == 16)
        #expect(try run(#"{"reduce": ["nope", {"var": "current"}, 7]}"#) == 0)
        #expect(try run(#"{"all": [[1, 2], {">": [{"var": ""}, 0]}]}"#) == true)
        #expect(try run(#"{"all": [[], {">": [{"var": ""}, 0]}]}"#) == false)
        #expect(try run(#"{"some": [[-1, 2], {">": [{"var": ""}, 0]}]}"#) == true)
        #expect(try run(#"{"none": [[-1, -2], {">": [{"var": ""}, 0]}]}"#) == true)
        #expect(try run(#"{"none": [[], {">": [{"var": ""}, 0]}]}"#) == true)
        #expect(try run(#"{"map": ["x", {"var": ""}]}"#) == [])
        #expect(try run(#"{"some": [{"var": "user.roles"}, {"==": [{"var": ""}, "admin"]}]}"#) == true)
    }

    @Test func customOperators() throws {
        #expect(try run(#"{"starts_with": [{"var": "email"}, "ana@"]}"#) == true)
        #expect(try run(#"{"ends_with": [{"var": "email"}, "@example.com"]}"#) == true)
        #expect(try run(#"{"ends_with": [{"var": "email"}, "@other.com"]}"#) == false)
        #expect(try run(#"{"starts_with": [{"var": "age"}, "4"]}"#) == .null)
        #expect(try run(#"{"starts_with": ["a"]}"#) == .null)
        #expect(try run(#"{"sem_ver": ["1.2.3", ">=", "1.0.0"]}"#) == true)
        #expect(try run(#"{"sem_ver": ["1.2.3", "<", "1.2.3-rc.1"]}"#) == false)
        #expect(try run(#"{"sem_ver": ["1.0.0-alpha", "<", "1.0.0-alpha.1"]}"#) == true)
        #expect(try run(#"{"sem_ver": ["1.0.0-alpha.beta", "<", "1.0.0-beta"]}"#) == true)
        #expect(try run(#"{"sem_ver": ["1.0.0-beta.2", "<", "1.0.0-beta.11"]}"#) == true)
        #expect(try run(#"{"sem_ver": ["1.0.0-rc.1", "<", "1.0.0"]}"#) == true)
        #expect(try run(#"{"sem_ver": ["1.2.3", "!=", "1.2.4"]}"#) == true)
        #expect(try run(#"{"sem_ver": ["1.2.3", "<=", "1.2.3"]}"#) == true)
        #expect(try run(#"{"sem_ver": ["1.2", "=", "1.2.0"]}"#) == true)
        #expect(try run(#"{"sem_ver": ["01.2.3", "=", "1.2.3"]}"#) == .null)
        #expect(try run(#"{"sem_ver": ["1.2.3", "=="]}"#) == .null)
        // Numbers are versions as flagd prints them; a Boolean is not one.
        #expect(try run(#"{"sem_ver": [1, "=", "1.0.0"]}"#) == true)
        #expect(try run(#"{"sem_ver": [1.5, "=", "1.5.0"]}"#) == true)
        #expect(try run(#"{"sem_ver": ["V1.2.3", "=", "v1.2.3"]}"#) == true)
        #expect(try run(#"{"sem_ver": [true, "=", "1.0.0"]}"#) == .null)
        #expect(try run(#"{"sem_ver": [999999, "=", "999999.0.0"]}"#) == true)
        // Go prints the float64 a million is there as `1e+06`: no version.
        #expect(try run(#"{"sem_ver": [1000000, "=", "1000000.0.0"]}"#) == .null)
        #expect(try run(#"{"sem_ver": [1000000.5, "=", "1.0.0"]}"#) == .null)
        #expect(try run(#"{"fractional": [["a", 1]]}"#) == "a")
        #expect(try run(#"{"fractional": []}"#) == .null)
        #expect(try run(#"{"fractional": ["key", ["a", 0], ["b", 0]]}"#) == .null)
        #expect(try run(#"{"fractional": ["key", ["a", 1.5], ["b", 1]]}"#) == .null)
        #expect(try run(#"{"fractional": ["key", ["a", 2147483647], ["b", 1]]}"#) == .null)
        #expect(try run(#"{"fractional": ["key", ["a", -5], ["b", 1]]}"#) == "b")
        #expect(try run(#"{"fractional": ["key", "not-a-bucket"]}"#) == .null)
        #expect(try run(#"{"fractional": ["key", [["nested"], 1]]}"#) == .null)
    }

    /// flagd's Go evaluator (`golang.org/x/mod/semver`) reads version numbers of any length and
    /// orders them as numbers: longer is greater. Beyond 64 bits they were not versions here,
    /// and long numeric pre-release identifiers were ordered as text.
    @Test func semVerNumbersOfAnyLength() throws {
        #expect(try run(#"{"sem_ver": ["18446744073709551616.0.0", ">", "18446744073709551615.0.0"]}"#) == true)
        #expect(try run(#"{"sem_ver": ["1.99999999999999999999999.0", "<", "1.100000000000000000000000.0"]}"#) == true)
        #expect(try run(#"{"sem_ver": ["2.0.99999999999999999999", "~", "2.0.1"]}"#) == true)
        #expect(try run(#"{"sem_ver": ["1.0.0-99999999999999999999", "<", "1.0.0-100000000000000000000"]}"#) == true)
        #expect(try run(#"{"sem_ver": ["1.0.0-100000000000000000000", "<", "1.0.0-alpha"]}"#) == true)
        #expect(try run(#"{"sem_ver": ["1.0.0-alpha.10", ">", "1.0.0-alpha.9"]}"#) == true)
        #expect(try run(#"{"sem_ver": ["1.0.0-alpha.010", "=", "1.0.0-alpha.10"]}"#) == .null)
        #expect(try run(#"{"sem_ver": ["0.0.0", "=", "v0"]}"#) == true)
    }

    /// Version parts are ASCII bytes, as flagd's evaluator reads them: a digit or a letter with
    /// a combining mark is one `Character` that sorts inside `"0"..."9"` (or `"a"..."z"`), and
    /// made a version of text flagd refuses.
    @Test func semVerPartsAreASCIIOnly() throws {
        #expect(try run(#"{"sem_ver": ["1.0\u0301.0", "=", "1.0.0"]}"#) == .null)
        #expect(try run(#"{"sem_ver": ["1.2.3-b\u0301", ">", "1.2.3-a"]}"#) == .null)
        #expect(try run(#"{"sem_ver": ["1.2.3+b\u0301", "=", "1.2.3"]}"#) == .null)
        #expect(try run(#"{"sem_ver": ["1.2.3-\u0661", "=", "1.2.3-1"]}"#) == .null)
        #expect(try run(#"{"sem_ver": ["1.2.3-b", ">", "1.2.3-a"]}"#) == true)
    }

    @Test func aHostileRuleRunsOutOfBudgetInsteadOfMemory() throws {
        // Doubling a text sixty times would need 2^61 bytes; the budget stops it at once.
        let range = (0..<60).map(String.init).joined(separator: ",")
        #expect(try run(#"{"reduce": [[\#(range)], {"cat": [{"var": "accumulator"}, {"var": "accumulator"}]}, "ab"]}"#) == .null)
        #expect(try failure(#"{"reduce": [[\#(range)], {"cat": [{"var": "accumulator"}, {"var": "accumulator"}]}, "ab"]}"#) == nil)
        // A computed argument list past the budget gives `null` too, not an evaluation's failure.
        let big: FlagValue = ["big": .list((0...EvaluationBudget.limit).map { .int($0) })]
        #expect(try run(#"{"+": {"var": "big"}}"#, data: big) == .null)
        // A list accumulator, which could double the same way, is refused as flagd refuses it.
        #expect(try failure(#"{"reduce": [[\#(range)], {"merge": [{"var": "accumulator"}, {"var": "accumulator"}]}, [1]]}"#) != nil)
        // Ordinary rules are far below it.
        #expect(try run(#"{"reduce": [[1, 2, 3], {"cat": [{"var": "accumulator"}, {"var": "current"}]}, ""]}"#) == "123")
    }

    @Test func compileErrorsNameTheirPlace() {
        func failure(_ rule: String, evaluators: [String: FlagValue] = [:]) -> LogicCompileError? {
            var compiler = LogicCompiler(evaluators: evaluators)
            do {
                _ = try compiler.compile(try FlagJSON.parse(rule), at: "t")
                return nil
            } catch let error as LogicCompileError {
                return error
            } catch {
                return nil
            }
        }
        #expect(failure(#"{"if": [{"nope": 1}, "a"]}"#) == LogicCompileError(path: "t.if[0]", message: "unknown operator \"nope\""))
        #expect(failure(#"{"$ref": "x"}"#)?.message == "no evaluator named \"x\" in $evaluators")
        #expect(failure(#"{"$ref": "a"}"#, evaluators: ["a": ["$ref": "b"], "b": ["$ref": "a"]])?.message.contains("refers to itself") == true)
        #expect(failure(#"{"$ref": 3}"#)?.message == "a reference names an evaluator with a string")
        // An object with several keys is data, as in JsonLogic.
        #expect(failure(#"{"a": 1, "b": 2}"#) == nil)
    }

    @Test func murmurHashMatchesTheReferenceVectors() {
        // SMHasher's verification values for x86_32 with seed 0 and a few strings.
        #expect(MurmurHash3.x86_32("") == 0)
        #expect(MurmurHash3.x86_32([0, 0, 0, 0] as [UInt8]) == 0x2362_F9DE)
        #expect(MurmurHash3.x86_32("Hello, world!") == 0xC036_3E43)
        #expect(MurmurHash3.x86_32("The quick brown fox jumps over the lazy dog") == 0x2E4F_F723)
        #expect(MurmurHash3.x86_32("abc", seed: 1) != MurmurHash3.x86_32("abc"))
    }

    /// Without a bucketing string, an empty targeting key is no targeting key in every mode:
    /// the answer is null (the default variant), as in flagd's evaluators — not a bucket chosen
    /// by the flag key's hash alone, which would put every anonymous user in one bucket.
    @Test func anEmptyTargetingKeyBucketsNobody() {
        let buckets: [FlagValue] = [.list([.string("a"), .int(1)]), .list([.string("b"), .int(1)])]
        for bucketing in FractionalBucketing.allCases {
            for key: FlagValue? in [.string(""), nil, .null, .int(5)] {
                let context: [String: FlagValue] = key.map { ["targetingKey": $0] } ?? [:]
                let scope = LogicScope(context: context, flagKey: "split-flag", timestamp: 0, bucketing: bucketing, budget: EvaluationBudget())
                #expect(FlagdOperators.fractional(buckets, scope: scope) == .null, "\(bucketing) \(String(describing: key))")
                // A bucketing value given explicitly is still used, even the empty string.
                let given = FlagdOperators.fractional([.string("")] + buckets, scope: scope)
                #expect(given != .null, "\(bucketing) explicit")
            }
        }
    }

    @Test(arguments: [[50, 50], [33, 33, 34]])
    func bucketingIsEvenWithinTwoPercent(weights: [Int]) {
        let buckets = weights.enumerated().map { FlagValue.list([.string("v\($0.offset)"), .int($0.element)]) }
        for bucketing in FractionalBucketing.allCases {
            var counts: [FlagValue: Int] = [:]
            for n in 0..<10_000 {
                let scope = LogicScope(context: ["targetingKey": .string("user-\(n)")], flagKey: "split-flag", timestamp: 0, bucketing: bucketing, budget: EvaluationBudget())
                counts[FlagdOperators.fractional(buckets, scope: scope), default: 0] += 1
            }
            for (index, weight) in weights.enumerated() {
                let share = Double(counts[.string("v\(index)")] ?? 0) / 10_000
                #expect(abs(share - Double(weight) / 100) <= 0.02, "\(bucketing) v\(index): \(share)")
            }
        }
    }
}
