import Foundation
import Testing
@testable import FeatureFlags
@testable import FeatureFlagsFlagd

/// JsonLogic's shared test suites (the json-logic/compat-tables repository's `suites/`
/// directory: `compatible.json` is the classic suite every implementation runs, the others
/// the community's newer ones), run through the evaluator when `JSONLOGIC_SUITES` names that
/// directory; otherwise skipped. Each case's `rule` is compiled and evaluated over its `data`
/// and compared with its `result`; a case expecting an `error` passes when the rule does not
/// compile or the evaluation fails as flagd's evaluator fails.
///
/// flagd's Go evaluator (`diegoholiveira/jsonlogic`) passes all of `compatible.json`: so must
/// we. The newer suites test operators and errors flagd does not have (`val`, `??`, `try`,
/// `throw`, `exists`) and decide cases where flagd's evaluator answers otherwise; their counts
/// are printed, not asserted. With `JSONLOGIC_OUT` set, every case's answer is written there
/// as one JSON line (`file`, `index`, `result` or `error`) to compare with another
/// evaluator's answers over the same files (Docs/Providers.md says how we compared with flagd's).
@Suite("JsonLogic shared suites")
struct JsonLogicSuiteTests {
    struct Outcome {
        var passed = 0
        var failures: [String] = []
        /// Each case's answer as one JSON line (file, index, result or error), to compare with
        /// another evaluator's.
        var lines: [String] = []
    }

    /// With `JSONLOGIC_CONTEXT` set, a case's object `data` is evaluated as a flag's context is:
    /// the root, with `$flagd.flagKey` "suite" and `$flagd.timestamp` 1,750,000,000 — for rules
    /// that use flagd's operators (`fractional` buckets by flag key and targeting key).
    static let dataIsContext = ProcessInfo.processInfo.environment["JSONLOGIC_CONTEXT"] != nil

    /// Runs the suite `name` (a path under `root`).
    static func run(_ name: String, under root: URL) throws -> Outcome {
        let file = root.appendingPathComponent(name)
        var outcome = Outcome()
        guard case .list(let cases) = try FlagJSON.parse(Array(try Data(contentsOf: file))) else { return outcome }
        for (index, item) in cases.enumerated() {
            guard case .object(let entry) = item, let rule = entry["rule"] else { continue }
            let description = entry["description"]?.stringValue ?? FlagJSON.string(rule)
            let expectsError = entry["error"] != nil
            var compiler = LogicCompiler(evaluators: [:])
            let budget = EvaluationBudget()
            let got: FlagValue?
            do {
                let compiled = try compiler.compile(rule, at: "rule")
                if Self.dataIsContext, case .object(let context)? = entry["data"] {
                    let scope = LogicScope(context: context, flagKey: "suite", timestamp: 1_750_000_000, bucketing: .highPrecision, budget: budget)
                    got = scope.evaluate(compiled)
                } else {
                    let scope = LogicScope(context: [:], flagKey: "suite", timestamp: 0, bucketing: .highPrecision, budget: budget)
                    got = scope.evaluate(compiled, data: .value(entry["data"] ?? .null))
                }
            } catch {
                got = nil
            }
            var line: [String: FlagValue] = ["file": .string(name), "index": .int(index)]
            if let got, budget.failure == nil { line["result"] = got } else { line["error"] = .string(budget.failure ?? "compile error") }
            outcome.lines.append(FlagJSON.string(.object(line)))
            if expectsError {
                if got == nil || budget.failure != nil { outcome.passed += 1 } else {
                    outcome.failures.append("\(description): \(FlagJSON.string(rule)) → \(FlagJSON.string(got ?? .null)), expected an error")
                }
                continue
            }
            let expected = entry["result"] ?? .null
            if let got, budget.failure == nil, Self.same(got, expected) { outcome.passed += 1 } else {
                let shown = got.map { FlagJSON.string($0) } ?? "compile error"
                outcome.failures.append("\(description): \(FlagJSON.string(rule)) data \(FlagJSON.string(entry["data"] ?? .null)) → \(shown)\(budget.failure.map { " (\($0))" } ?? ""), expected \(FlagJSON.string(expected))")
            }
        }
        return outcome
    }

    /// Equal as JSON: numbers by value (`1` and `1.0` are one number).
    static func same(_ a: FlagValue, _ b: FlagValue) -> Bool {
        switch (a, b) {
        case (.int(let x), .double(let y)), (.double(let y), .int(let x)): return Double(x) == y
        case (.list(let x), .list(let y)): return x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        case (.object(let x), .object(let y)): return x.count == y.count && x.allSatisfy { key, value in y[key].map { same(value, $0) } ?? false }
        default: return a == b
        }
    }

    @Test func theClassicSuitePasses() throws {
        guard let path = ProcessInfo.processInfo.environment["JSONLOGIC_SUITES"], !path.isEmpty else {
            print("JsonLogic shared suites: skipped — set JSONLOGIC_SUITES to json-logic/compat-tables' suites directory")
            return
        }
        let root = URL(fileURLWithPath: path)
        var lines: [String] = []
        defer {
            if let out = ProcessInfo.processInfo.environment["JSONLOGIC_OUT"] { try? Data(lines.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: out)) }
        }
        let classic = try Self.run("compatible.json", under: root)
        lines += classic.lines
        print("JsonLogic compatible.json: \(classic.passed) of \(classic.passed + classic.failures.count) passed")
        #expect(classic.failures.isEmpty, "\(classic.failures.count) failed:\n\(classic.failures.joined(separator: "\n"))")
        #expect(classic.passed > 0)
        guard let index = try? FlagJSON.parse(Array(try Data(contentsOf: root.appendingPathComponent("index.json")))), case .list(let names) = index else { return }
        for case .string(let name) in names where name != "compatible.json" {
            guard let outcome = try? Self.run(name, under: root) else { continue }
            lines += outcome.lines
            print("JsonLogic \(name): \(outcome.passed) of \(outcome.passed + outcome.failures.count)")
            for failure in outcome.failures { print("    \(failure)") }
        }
    }
}
