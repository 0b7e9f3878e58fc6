import Foundation
import Testing
@testable import FeatureFlags

/// The JSON parser against nst/JSONTestSuite (`test_parsing/`), when `JSON_TEST_SUITE` names that
/// directory; otherwise the test says it was skipped. Every `n_` file must be refused and every
/// `y_` file must parse (RFC 8259), except the two with a repeated member name: RFC 8259 only
/// says names SHOULD be unique, and this parser refuses a repeat on purpose (Docs/FlagDocument.md:
/// two readers of one document must not see different values). The `i_` files, where RFC 8259
/// lets a parser choose, are listed with what this parser does, and must never crash it.
@Suite("JSONTestSuite conformance")
struct JSONTestSuiteConformanceTests {
    @Test func theSuitesMustAndMustNotFilesAreJudgedAsRFC8259Says() throws {
        guard let path = ProcessInfo.processInfo.environment["JSON_TEST_SUITE"], !path.isEmpty else {
            print("JSONTestSuite: skipped — set JSON_TEST_SUITE to nst/JSONTestSuite's test_parsing directory")
            return
        }
        let directory = URL(fileURLWithPath: path)
        let names = try FileManager.default.contentsOfDirectory(atPath: path).filter { $0.hasSuffix(".json") }.sorted()
        var wrong: [String] = []
        var implementationDefined: [String] = []
        for name in names {
            let bytes = Array(try Data(contentsOf: directory.appendingPathComponent(name)))
            let outcome: String
            do {
                _ = try FlagJSON.parse(bytes)
                outcome = "accepted"
            } catch {
                outcome = "refused (\(error.kind))"
            }
            switch name.first {
            case "y" where name.hasPrefix("y_object_duplicated_key"):
                if outcome == "accepted" { wrong.append("\(name): accepted, refused on purpose") }
            case "y" where outcome != "accepted": wrong.append("\(name): \(outcome), must be accepted")
            case "n" where outcome == "accepted": wrong.append("\(name): accepted, must be refused")
            case "i": implementationDefined.append("\(name): \(outcome)")
            default: break
            }
        }
        print("JSONTestSuite: \(names.count) files, \(wrong.count) judged wrongly; implementation-defined:")
        for line in implementationDefined { print("  \(line)") }
        #expect(wrong.isEmpty, "\(wrong.count) of \(names.count):\n\(wrong.joined(separator: "\n"))")
        #expect(names.count > 300, "only \(names.count) files under \(path)")
    }
}
