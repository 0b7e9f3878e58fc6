import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
@testable import FeatureFlagsFlagd
import FeatureFlagsTesting
import FlagServer

/// A conformance runner for flagd-style evaluator gherkin: every `*.feature` of a directory,
/// over the flags document beside it (`../flags/testkit-flags.json`, or `flags.json` in the
/// directory), each example row run through the public API — a provider on a `FlagdEndpoint`
/// served over loopback, `identify(_:)` with the row's context, typed `details(_:)` — and the
/// rows that pass and fail reported.
///
/// The project's own scenarios (`Fixtures/gherkin`) always run. flagd's test bed runs when
/// `FLAGD_TESTBED_GHERKIN` names its `evaluator/gherkin` directory (a clone of
/// open-feature/flagd-testbed); otherwise that test says it was skipped. Tags choose the
/// bucketing: `@fractional-v1` legacy percent, `@fractional-cbor` or `@fractional-v3` CBOR
/// (the test bed's provider suites say v3), anything else (`@fractional-v2`) flagd's
/// high-precision mode.
@Suite("flagd gherkin conformance", .hangLimit(minutes: 2))
struct GherkinConformanceTests {
    static let ownDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/gherkin")

    @Test func theProjectsOwnScenariosPass() async throws {
        let report = try await Self.run(directory: Self.ownDirectory)
        #expect(report.failures.isEmpty, "\(report.failures.count) of \(report.total) rows failed:\n\(report.failures.joined(separator: "\n"))")
        #expect(report.total >= 20, "only \(report.total) rows found")
    }

    /// The provider suites of flagd's test bed (`gherkin/`: targeting, evaluation, disabled,
    /// metadata) over every flags file of its `flags/` directory at once, when
    /// `FLAGD_TESTBED` names a clone. Rows that need what a device evaluating a file does not
    /// have — a flagd server's selector (flag sets) — are counted as skipped, not passed.
    @Test func flagdsProviderSuitesPass() async throws {
        guard let root = ProcessInfo.processInfo.environment["FLAGD_TESTBED"], !root.isEmpty else {
            print("flagd provider gherkin: skipped — set FLAGD_TESTBED to a clone of open-feature/flagd-testbed")
            return
        }
        let base = URL(fileURLWithPath: root)
        let flagsDirectory = base.appendingPathComponent("flags")
        var flags: [String: FlagValue] = [:]
        var evaluators: [String: FlagValue] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: flagsDirectory.path).filter({ $0.hasSuffix(".json") }).sorted() {
            let document = try FlagJSON.parse(Array(try Data(contentsOf: flagsDirectory.appendingPathComponent(name))))
            for (key, flag) in document.objectValue?["flags"]?.objectValue ?? [:] where flags[key] == nil { flags[key] = flag }
            for (key, rule) in document.objectValue?["$evaluators"]?.objectValue ?? [:] { evaluators[key] = rule }
        }
        let merged = FlagJSON.string(.object(["flags": .object(flags), "$evaluators": .object(evaluators)]))
        let suites = ["targeting.feature", "evaluation.feature", "disabled.feature", "metadata.feature"]
        let report = try await Self.run(directory: base.appendingPathComponent("gherkin"), features: suites, document: Data(merged.utf8))
        print("flagd provider gherkin: \(report.total - report.failures.count - report.skipped.count) of \(report.total) rows passed, \(report.skipped.count) skipped")
        for skipped in report.skipped { print("  skipped: \(skipped)") }
        #expect(report.failures.isEmpty, "\(report.failures.count) of \(report.total) rows failed:\n\(report.failures.joined(separator: "\n"))")
        #expect(report.total > 0, "no example rows found under \(root)")
    }

    @Test func flagdsTestBedPasses() async throws {
        guard let path = ProcessInfo.processInfo.environment["FLAGD_TESTBED_GHERKIN"], !path.isEmpty else {
            print("flagd gherkin conformance: skipped — set FLAGD_TESTBED_GHERKIN to flagd-testbed's evaluator/gherkin directory")
            return
        }
        let report = try await Self.run(directory: URL(fileURLWithPath: path))
        print("flagd gherkin conformance: \(report.total - report.failures.count) of \(report.total) rows passed")
        #expect(report.failures.isEmpty, "\(report.failures.count) of \(report.total) rows failed:\n\(report.failures.joined(separator: "\n"))")
        #expect(report.total > 0, "no example rows found under \(path)")
    }

    // MARK: Running

    struct Report {
        var total = 0
        var failures: [String] = []
        var skipped: [String] = []
    }

    /// The bucketing a scenario's tags ask for.
    static func bucketing(_ tags: Set<String>) -> FractionalBucketing {
        if tags.contains("@fractional-v1") { return .legacyPercent }
        if tags.contains("@fractional-cbor") || tags.contains("@fractional-v3") { return .cbor }
        return .highPrecision
    }

    static func run(directory: URL) async throws -> Report {
        let flagsFile = [directory.appendingPathComponent("flags.json"), directory.deletingLastPathComponent().appendingPathComponent("flags/testkit-flags.json")]
            .first { FileManager.default.fileExists(atPath: $0.path) }
        let document = try Data(contentsOf: try #require(flagsFile, "no flags document beside \(directory.path)"))
        let features = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".feature") }.sorted()
        return try await run(directory: directory, features: features, document: document)
    }

    /// The `features` of `directory`, every row against `document`.
    static func run(directory: URL, features: [String], document: Data) async throws -> Report {
        var runs: [Gherkin.Run] = []
        for name in features {
            let text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
            runs += Gherkin.parse(text, file: name)
        }
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        try server.serveFlagd(Array(document))
        var providers: [FractionalBucketing: (FeatureFlagProvider, TempDir)] = [:]
        defer { for (provider, _) in providers.values { provider.shutdown() } }
        var report = Report()
        for run in runs {
            let mode = bucketing(run.tags)
            if providers[mode] == nil {
                let dir = TempDir()
                var configuration = FeatureFlagProvider.Configuration()
                configuration.changeStreams = false
                let reachability = ManualReachability(true)
                let provider = FeatureFlagProvider(
                    context: .anonymous,
                    fetcher: FlagFetcher(endpoint: .flagd(url: server.baseURL.appendingPathComponent("flagd/flags.json"), bucketing: mode), configuration: .loopback),
                    store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), configuration: configuration, reachability: reachability,
                    lifecycle: ManualLifecycle())
                guard await provider.refresh().isSuccess else {
                    report.failures.append("the rules could not be fetched for \(mode)")
                    return report
                }
                // Offline from here: every identify is evaluated on the device, at once.
                reachability.set(false)
                providers[mode] = (provider, dir)
            }
            guard let (provider, _) = providers[mode] else { continue }
            report.total += 1
            switch run.check(provider) {
            case nil: break
            case .skipped(let why)?: report.skipped.append("\(run.name): \(why)")
            case .failed(let why)?: report.failures.append("\(run.name): \(why)")
            }
        }
        return report
    }
}

/// A small reader of the gherkin the evaluator suites use: features, backgrounds, scenarios
/// and outlines with examples tables, tags at every level, the steps below.
enum Gherkin {
    /// One scenario (or one example row of an outline), ready to run.
    struct Run {
        var name: String
        var tags: Set<String>
        var steps: [Step]

        /// Why a row did not pass.
        enum Outcome {
            /// What did not hold.
            case failed(String)
            /// The row needs what a file evaluated on the device does not have.
            case skipped(String)
        }

        /// Nil when the row passes.
        func check(_ provider: FeatureFlagProvider) -> Outcome? {
            if tags.contains("@deprecated") { return .skipped("deprecated by the test bed (a newer scenario replaces it)") }
            // A selector (flag sets) is a flagd server's; a file evaluated on the device has none.
            if steps.contains(where: { $0.text.hasPrefix(#"an option "selector""#) }) { return .skipped("a flagd selector (flag sets)") }
            return checkSteps(provider).map(Outcome.failed)
        }

        /// Nil when the row passes, else what did not hold.
        private func checkSteps(_ provider: FeatureFlagProvider) -> String? {
            var flag: (type: String, key: String, fallback: String)?
            var targetingKey: String?
            var attributes: [String: FlagValue] = [:]
            var details: FlagDetails<FlagValue?>?
            for step in steps {
                let text = step.text
                if let m = text.firstMatch(of: /^an? (\w+)-flag with key "([^"]*)" and a (?:fallback|default) value "((?:[^"\\]|\\.)*)"$/) {
                    flag = (String(m.1), String(m.2), Gherkin.unescape(String(m.3)))
                } else if text.firstMatch(of: /^an option "[^"]*" of type "[^"]*" with value "[^"]*"$/) != nil {
                    // A provider option (cache, connection): nothing to a file evaluated on the device.
                    continue
                } else if text == "a stable flagd provider" {
                    continue
                } else if let m = text.firstMatch(of: /^a context containing a key "([^"]*)", with type "(\w+)" and with value "((?:[^"\\]|\\.)*)"$/) {
                    attributes[String(m.1)] = Gherkin.value(Gherkin.unescape(String(m.3)), type: String(m.2))
                } else if let m = text.firstMatch(of: /^a context containing a key "([^"]*)", with type "Object" and with value "(.*)"$/) {
                    // An example cell holding JSON, its quotes unescaped.
                    attributes[String(m.1)] = Gherkin.value(String(m.2), type: "Object")
                } else if let m = text.firstMatch(of: /^a context containing a targeting key with value "([^"]*)"$/) {
                    targetingKey = String(m.1)
                } else if let m = text.firstMatch(of: /^a context containing a nested property with outer key "([^"]*)" and inner key "([^"]*)", with value "([^"]*)"$/) {
                    var inner = attributes[String(m.1)]?.objectValue ?? [:]
                    inner[String(m.2)] = .string(String(m.3))
                    attributes[String(m.1)] = .object(inner)
                } else if text == "the flag was evaluated with details" {
                    guard let flag else { return "no flag given before the evaluation" }
                    provider.identify(EvaluationContext(targetingKey: targetingKey, attributes: attributes))
                    details = Gherkin.evaluate(provider, flag)
                } else if let m = text.firstMatch(of: /^the resolved details value should be "((?:[^"\\]|\\.)*)"$/) {
                    guard let details, let flag else { return "no evaluation" }
                    let expected = Gherkin.value(Gherkin.unescape(String(m.1)), type: flag.type)
                    guard Gherkin.same(details.value ?? .null, expected) else {
                        return "value \(details.value.map { FlagJSON.string($0) } ?? "nil") (\(details.reason.rawValue)), expected \(FlagJSON.string(expected))"
                    }
                } else if let m = text.firstMatch(of: /^the reason should be "([^"]*)"$/) {
                    guard details?.reason.rawValue == String(m.1) else { return "reason \(details?.reason.rawValue ?? "nil"), expected \(m.1)" }
                } else if let m = text.firstMatch(of: /^the error-code should be "([^"]*)"$/) {
                    let code = details?.errorCode?.rawValue ?? ""
                    guard code == String(m.1) else { return "error code \(code.isEmpty ? "none" : code), expected \(m.1)" }
                } else if text == "the resolved metadata is empty" {
                    guard details?.metadata.isEmpty == true else { return "metadata \(details?.metadata ?? [:]), expected none" }
                } else if text == "the resolved metadata should contain" {
                    for row in step.table.dropFirst() where row.count >= 3 {
                        let expected = Gherkin.value(row[2], type: row[1])
                        guard let found = details?.metadata[row[0]], Gherkin.same(found, expected) else {
                            return "metadata \(row[0]) is \(details?.metadata[row[0]].map { FlagJSON.string($0) } ?? "missing"), expected \(row[2])"
                        }
                    }
                } else if text == "an evaluator" {
                    continue
                } else {
                    return "unknown step: \(text)"
                }
            }
            return nil
        }
    }

    struct Step {
        var text: String
        var table: [[String]] = []
    }

    /// The typed evaluation of `flag`, as a FlagValue.
    static func evaluate(_ provider: FeatureFlagProvider, _ flag: (type: String, key: String, fallback: String)) -> FlagDetails<FlagValue?> {
        func erase<T>(_ details: FlagDetails<T>, _ wrap: (T) -> FlagValue) -> FlagDetails<FlagValue?> {
            FlagDetails(
                key: details.key, value: wrap(details.value), variant: details.variant, reason: details.reason, errorCode: details.errorCode,
                errorMessage: details.errorMessage, source: details.source, metadata: details.metadata)
        }
        switch flag.type {
        case "Boolean": return erase(provider.details(FlagKey(flag.key, default: flag.fallback == "true")), FlagValue.bool)
        case "Integer": return erase(provider.details(FlagKey(flag.key, default: Int(flag.fallback) ?? 0)), FlagValue.int)
        case "Float": return erase(provider.details(FlagKey(flag.key, default: Double(flag.fallback) ?? 0)), FlagValue.double)
        case "Object":
            let fallback = (try? FlagJSON.parse(Array(flag.fallback.utf8))) ?? .object([:])
            return erase(provider.details(FlagKey<FlagValue>(flag.key, default: fallback)), { $0 })
        default: return erase(provider.details(FlagKey(flag.key, default: flag.fallback)), FlagValue.string)
        }
    }

    /// `text` as a value of a gherkin type.
    static func value(_ text: String, type: String) -> FlagValue {
        switch type {
        case "Integer": return Int(text).map(FlagValue.int) ?? .string(text)
        case "Float": return Double(text).map(FlagValue.double) ?? .string(text)
        case "Boolean": return text == "true" ? .bool(true) : text == "false" ? .bool(false) : .string(text)
        case "Object": return (try? FlagJSON.parse(Array(text.utf8))) ?? lenientJSON(text) ?? .string(text)
        default: return .string(text)
        }
    }

    /// JSON as the test bed's harnesses read it: an object with a repeated key keeps the last
    /// value (the library's parser refuses such an object; an app's context cannot hold one).
    static func lenientJSON(_ text: String) -> FlagValue? {
        func convert(_ any: Any) -> FlagValue {
            switch any {
            case let number as NSNumber where !(any is String):
                switch String(cString: number.objCType) {
                case "c", "B": return .bool(number.boolValue)
                case "d", "f": return .double(number.doubleValue)
                default: return .int(number.intValue)
                }
            case let text as String: return .string(text)
            case let list as [Any]: return .list(list.map(convert))
            case let object as [String: Any]: return .object(object.mapValues(convert))
            default: return .null
            }
        }
        return (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])).map(convert)
    }

    /// Equal as values: numbers by value (`1` and `1.0` alike).
    static func same(_ a: FlagValue, _ b: FlagValue) -> Bool {
        switch (a, b) {
        case (.int(let x), .double(let y)), (.double(let y), .int(let x)): return Double(x) == y
        default: return a == b
        }
    }

    /// A table cell or quoted step argument with its escapes resolved (`\"`, `\|`, `\\`, `\n`);
    /// any other backslash stays, as gherkin keeps it (the test bed hashes `A\u0000B` as those
    /// eight characters).
    static func unescape(_ text: String) -> String {
        var out = ""
        var escaped = false
        for character in text {
            if escaped {
                switch character {
                case "\\", "|", "\"": out.append(character)
                case "n": out.append("\n")
                default:
                    out.append("\\")
                    out.append(character)
                }
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else {
                out.append(character)
            }
        }
        return out
    }

    static func cells(_ line: String) -> [String] {
        var cells: [String] = []
        var current = ""
        var escaped = false
        for character in line.trimmingCharacters(in: .whitespaces).dropFirst() {
            if escaped {
                current.append("\\")
                current.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "|" {
                cells.append(current.trimmingCharacters(in: .whitespaces))
                current = ""
            } else {
                current.append(character)
            }
        }
        return cells
    }

    /// The runs of a feature file: each plain scenario once, each outline once per example row.
    static func parse(_ text: String, file: String) -> [Run] {
        var runs: [Run] = []
        var featureTags: Set<String> = []
        var pendingTags: Set<String> = []
        var background: [Step] = []
        var inBackground = false
        // The scenario being read: its name, tags, steps, and examples (tags, header, rows).
        var scenario: (name: String, tags: Set<String>, steps: [Step], outline: Bool)?
        var examples: [(tags: Set<String>, rows: [[String]])] = []
        var readingExamples = false

        func finish() {
            guard let current = scenario else { return }
            if current.outline {
                for block in examples where block.rows.count > 1 {
                    let header = block.rows[0]
                    for (index, row) in block.rows.dropFirst().enumerated() {
                        func fill(_ text: String) -> String {
                            var filled = text
                            for (name, value) in zip(header, row) { filled = filled.replacingOccurrences(of: "<\(name)>", with: value) }
                            return filled
                        }
                        let steps = (background + current.steps).map { Step(text: fill($0.text), table: $0.table.map { $0.map(fill) }) }
                        runs.append(Run(name: "\(file): \(current.name) [\(index + 1): \(row.joined(separator: ", "))]",
                                        tags: featureTags.union(current.tags).union(block.tags), steps: steps))
                    }
                }
            } else {
                runs.append(Run(name: "\(file): \(current.name)", tags: featureTags.union(current.tags), steps: background + current.steps))
            }
            scenario = nil
            examples = []
            readingExamples = false
        }

        for raw in text.components(separatedBy: "\n") {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("@") {
                pendingTags.formUnion(line.split(separator: " ").map(String.init).filter { $0.hasPrefix("@") })
                continue
            }
            if line.hasPrefix("Feature:") {
                featureTags = pendingTags
                pendingTags = []
            } else if line.hasPrefix("Background:") {
                inBackground = true
            } else if line.hasPrefix("Scenario Outline:") || line.hasPrefix("Scenario Template:") || line.hasPrefix("Scenario:") {
                finish()
                inBackground = false
                let outline = !line.hasPrefix("Scenario:")
                let name = line.drop { $0 != ":" }.dropFirst().trimmingCharacters(in: .whitespaces)
                scenario = (name, pendingTags, [], outline)
                pendingTags = []
            } else if line.hasPrefix("Examples:") || line.hasPrefix("Scenarios:") {
                examples.append((pendingTags, []))
                pendingTags = []
                readingExamples = true
            } else if line.hasPrefix("|") {
                let cells = cells(line)
                if readingExamples, !examples.isEmpty {
                    examples[examples.count - 1].rows.append(cells)
                } else if inBackground, !background.isEmpty {
                    background[background.count - 1].table.append(cells)
                } else if var current = scenario, !current.steps.isEmpty {
                    current.steps[current.steps.count - 1].table.append(cells)
                    scenario = current
                }
            } else if let keyword = ["Given ", "When ", "Then ", "And ", "But ", "* "].first(where: line.hasPrefix) {
                let step = Step(text: String(line.dropFirst(keyword.count)))
                if inBackground { background.append(step) } else { scenario?.steps.append(step) }
            }
        }
        finish()
        return runs
    }
}
