import Foundation
import Testing
import TestSupport

/// Docs/Architecture.md's layer table ("## Layers") is the core library's folders in order, each
/// row depending only on the rows above it (folders of one row may use each other). These tests
/// read the table and the sources and hold the table to the code: every folder is listed once,
/// no file names a type, function or constant declared at the top level of a folder in a lower
/// row, and the core names nothing declared in `FeatureFlagsUI`.
///
/// Names are found by reading the sources, not by compiling them: top-level declarations
/// (`struct`, `class`, `enum`, `protocol`, `actor`, `typealias`, `func`, `let`, `var`) name their
/// folder; a name declared in two folders is ambiguous and not followed; comments and string
/// literals are skipped. Extensions declare nothing, so an extension in a higher folder that
/// adds to a lower folder's type is the way up.
@Suite("The layer table")
struct LayerTableTests {
    static let sources = DocSnippetCoverageTests.root.appendingPathComponent("Sources")
    static let core = sources.appendingPathComponent("FeatureFlags")

    /// The table's rows, top first: the folder names in the first column of each row.
    static func rows() throws -> [[String]] {
        let architecture = try String(
            contentsOf: DocSnippetCoverageTests.root.appendingPathComponent("Docs/Architecture.md"), encoding: .utf8)
        let start = try #require(architecture.range(of: "\n## Layers\n"))
        let section = architecture[start.upperBound...]
        let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
        var rows: [[String]] = []
        for line in section[..<end].split(separator: "\n") where line.hasPrefix("| `") {
            let first = line.dropFirst(2).prefix { $0 != "|" }
            rows.append(first.matches(of: /`([^`]+)`/).map { String($0.output.1) })
        }
        return rows
    }

    /// The Swift files under `directory`, with their text.
    static func swiftFiles(under directory: URL) throws -> [(path: String, text: String)] {
        let walker = try #require(FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil))
        var files: [(String, String)] = []
        for case let url as URL in walker where url.pathExtension == "swift" {
            files.append((String(url.path.dropFirst(directory.path.count + 1)), try String(contentsOf: url, encoding: .utf8)))
        }
        return files.sorted { $0.0 < $1.0 }
    }

    /// The names `text` declares at its top level.
    static func topLevelNames(_ text: String) -> [String] {
        let declaration = /^(?:@\w+(?:\([^)\n]*\))?\s+)*(?:(?:public|package|private|fileprivate|internal|final|indirect|nonisolated)\s+)*(?:struct|class|enum|protocol|actor|typealias|func|let|var)\s+([A-Za-z_]\w*)/
            .anchorsMatchLineEndings()
        return text.matches(of: declaration).map { String($0.output.1) }
    }

    /// The identifiers `text` uses outside comments and string literals.
    static func identifiers(_ text: String) -> Set<String> {
        var code = text.replacing(/\/\*[\s\S]*?\*\//, with: "")
        code = code.replacing(/\/\/[^\n]*/, with: "")
        code = code.replacing(/#"[^\n]*?"#/, with: "\"\"")
        code = code.replacing(/"(?:\\.|[^"\\\n])*"/, with: "\"\"")
        // Identifiers as the longest runs of word characters (not `\b`: Swift's default word
        // boundaries follow Unicode's, where `Type.member` is one word).
        return Set(code.matches(of: /[A-Za-z_][A-Za-z0-9_]*/).map { String($0.output) })
    }

    @Test func everyFolderOfTheCoreIsListedOnce() throws {
        let listed = try Self.rows().flatMap { $0 }
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.core.path).filter {
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: Self.core.appendingPathComponent($0).path, isDirectory: &isDirectory)
                && isDirectory.boolValue
        }
        #expect(listed.count >= 10, "the table was not found or not read: \(listed)")
        for folder in folders { #expect(listed.filter { $0 == folder }.count == 1, "Sources/FeatureFlags/\(folder) is not listed once in the layer table") }
        for name in listed { #expect(folders.contains(name), "the layer table lists \(name), which is no folder of Sources/FeatureFlags") }
    }

    @Test func noFileUsesAFolderOfALowerRow() async throws {
        // Off the global executor's threads: loopback tests beside it need them.
        try await blocking {
            var row: [String: Int] = [:]
            for (index, folders) in try Self.rows().enumerated() { for folder in folders { row[folder] = index } }
            let files = try Self.swiftFiles(under: Self.core)
            var owners: [String: Set<String>] = [:]
            for file in files {
                let folder = String(file.path.prefix { $0 != "/" })
                for name in Self.topLevelNames(file.text) { owners[name, default: []].insert(folder) }
            }
            var upward: [String] = []
            for file in files {
                let folder = String(file.path.prefix { $0 != "/" })
                guard let own = row[folder] else { continue }  // reported by the test above
                for name in Self.identifiers(file.text).sorted() {
                    guard let declared = owners[name], declared.count == 1, let owner = declared.first, owner != folder,
                        let theirs = row[owner], theirs > own
                    else { continue }
                    upward.append("\(file.path) uses \(name), declared in \(owner) (a lower row)")
                }
            }
            #expect(upward.isEmpty, "\(upward.count) uses point down the table:\n\(upward.joined(separator: "\n"))")
        }
    }

    @Test func theCoreNamesNothingOfTheUILibrary() async throws {
        // Off the global executor's threads: loopback tests beside it need them.
        try await blocking {
            let ui = Set(try Self.swiftFiles(under: Self.sources.appendingPathComponent("FeatureFlagsUI")).flatMap { Self.topLevelNames($0.text) })
            #expect(ui.contains("ObservableFlags") && ui.contains("FlagInspector"), "FeatureFlagsUI's declarations were not read: \(ui.sorted())")
            for file in try Self.swiftFiles(under: Self.core) {
                let named = Self.identifiers(file.text).intersection(ui)
                #expect(named.isEmpty, "Sources/FeatureFlags/\(file.path) names \(named.sorted()) of FeatureFlagsUI")
            }
        }
    }

    /// The checks see what they are meant to: a name declared at the top level, a use in code,
    /// and neither in a comment or a string.
    @Test func theReaderFindsDeclarationsAndUsesButNotCommentsOrStrings() {
        let text = """
            /// Uses Hidden in a comment.
            package final class Visible: Sendable {
                let inner = "Quoted"  // and Ignored here
                struct Nested {}
            }
            @inline(__always) func helper() -> Visible? { nil }
            let kind = Visible.Type.self
            """
        #expect(Self.topLevelNames(text) == ["Visible", "helper", "kind"])
        let used = Self.identifiers(text)
        #expect(used.contains("Visible") && used.contains("Sendable"))
        #expect(!used.contains("Hidden") && !used.contains("Quoted") && !used.contains("Ignored"))
    }
}
