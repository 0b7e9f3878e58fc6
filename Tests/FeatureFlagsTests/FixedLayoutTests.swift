import Foundation
import Testing
import TestSupport

/// Docs/Performance.md ("Dates and URLs"): no value type of the libraries stores a Foundation
/// `Date` or `URL` — on Apple platforms they have no fixed layout, and one stored field makes
/// every copy of everything that holds it go through runtime witnesses. This test reads the
/// sources, so that a new field cannot undo it unnoticed.
@Suite("Fixed layout of the core's value types")
struct FixedLayoutTests {
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources")
    /// The libraries an app links (the development server and the tools are not shipped).
    static let libraries = ["FeatureFlags", "FeatureFlagsFlagd", "FeatureFlagsServices", "FeatureFlagsSigning", "FeatureFlagsUI", "FeatureFlagsTesting"]

    /// The stored `Date` and `URL` fields of structs and enums in `text`, as `Type.field` (or
    /// `Type.case` for an enum case's payload). A deliberately small reader: it tracks braces
    /// and declarations, which is all the package's formatting needs.
    static let declarationWords = ["struct ", "enum ", "class ", "actor ", "protocol ", "extension "]

    static func resilientFields(in text: String) -> [String] {
        var found: [String] = []
        // Open scopes: the type a brace belongs to (nil for functions, closures, computed
        // properties and everything else).
        var scopes: [(name: String, isValueType: Bool)?] = []
        var pendingType: (name: String, isValueType: Bool)?
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("//") { continue }
            let code = line.components(separatedBy: " //").first ?? line
            // The expressions run only on lines that hold their words: a regular expression on
            // every line of every library took seconds of a cooperative thread.
            if Self.declarationWords.contains(where: code.contains),
                let match = code.firstMatch(of: /\b(struct|enum|class|actor|protocol|extension) ([A-Za-z_][A-Za-z0-9_.]*)/)
            {
                let kind = match.output.1
                pendingType = (String(match.output.2), kind == "struct" || kind == "enum")
            }
            // A stored member sits directly in a value type's braces.
            if code.contains("Date") || code.contains("URL"), let current = scopes.last, let owner = current, owner.isValueType {
                let stored = code.firstMatch(of: /^(?:[a-z()]+ )*(?:let|var) ([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([^={]*)$/)
                    ?? code.firstMatch(of: /^(?:[a-z()]+ )*(?:let|var) ([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([^={]*)=/)
                if let stored, !stored.output.2.contains("->"), stored.output.2.contains(/\b(Date|URL)\b/) {
                    found.append("\(owner.name).\(stored.output.1)")
                }
                if let payload = code.firstMatch(of: /^(?:indirect )?case ([A-Za-z_][A-Za-z0-9_]*)\((.*)\)/),
                    payload.output.2.contains(/\b(Date|URL)\b/), !payload.output.2.contains("->")
                {
                    found.append("\(owner.name).\(payload.output.1)")
                }
            }
            for character in code {
                if character == "{" {
                    scopes.append(pendingType)
                    pendingType = nil
                } else if character == "}", !scopes.isEmpty {
                    scopes.removeLast()
                }
            }
        }
        return found
    }

    @Test func noValueTypeStoresADateOrAURL() async throws {
        // On a thread of its own: the cooperative threads are two on a two-core machine, and
        // the loopback tests that start beside this one need them.
        let (files, found) = try await blocking { () throws -> (Int, [String]) in
            var files = 0
            var found: [String] = []
            for library in Self.libraries {
                let folder = Self.sources.appendingPathComponent(library)
                guard let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else { continue }
                for case let url as URL in walker where url.pathExtension == "swift" {
                    files += 1
                    found += Self.resilientFields(in: try String(contentsOf: url, encoding: .utf8)).map { "\(url.lastPathComponent): \($0)" }
                }
            }
            return (files, found)
        }
        #expect(files > 100, "the sources were not found at \(Self.sources.path)")
        #expect(found.isEmpty, "store seconds or a URLReference instead (Support/FixedLayout.swift): \(found)")
    }

    @Test func theReaderFindsWhatItLooksFor() {
        let text = """
            struct A {
                let when: Date
                var link: URL?
                private let seconds: TimeInterval
                var computed: Date { Date() }
                let clock: @Sendable () -> Date
                func f() { let local: Date = Date() }
                enum Inner {
                    case file(URL)
                    case none
                }
            }
            final class B {
                let url: URL
            }
            enum C: Sendable {
                case at(Date)
                case named(String)
            }
            """
        #expect(Self.resilientFields(in: text) == ["A.when", "A.link", "Inner.file", "C.at"])
    }
}
