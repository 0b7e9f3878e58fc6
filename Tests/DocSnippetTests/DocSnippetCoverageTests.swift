import FeatureFlags
import FlagCtlCore
import Foundation
import Testing

/// Every Swift snippet of the README and the guides compiles as written: each ```swift block
/// must equal a region of the sources in ``snippetDirectories`` (between `// snippet: NAME` and
/// `// end snippet`; the parts of one name joined by a blank line, indentation removed). Those
/// targets are built with every `swift test` and by CI, and `DocSnippets` is type-checked for
/// iOS, macOS and tvOS by apple-sdk-check. A package-manifest excerpt (a block that declares
/// `.package(`) is checked against `Package.swift` and the version instead.
@Suite("Documentation snippets")
struct DocSnippetCoverageTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The README and every guide under `Docs/`.
    static func documents() throws -> [URL] {
        var found = [root.appendingPathComponent("README.md")]
        let docs = root.appendingPathComponent("Docs")
        let walker = try #require(FileManager.default.enumerator(at: docs, includingPropertiesForKeys: nil))
        for case let url as URL in walker where url.pathExtension == "md" { found.append(url) }
        return found.sorted { $0.path < $1.path }
    }

    /// The ```swift blocks of `text`, with their line numbers.
    static func swiftBlocks(_ text: String) -> [(line: Int, code: String)] {
        var blocks: [(Int, String)] = []
        var current: [String]?
        var start = 0
        for (index, line) in text.components(separatedBy: "\n").enumerated() {
            if current == nil, line.trimmingCharacters(in: .whitespaces) == "```swift" {
                current = []
                start = index + 1
            } else if current != nil, line.trimmingCharacters(in: .whitespaces) == "```" {
                blocks.append((start, normalised(current ?? [])))
                current = nil
            } else if current != nil {
                current?.append(line)
            }
        }
        return blocks
    }

    /// Lines without trailing spaces and without their common indentation, joined.
    static func normalised(_ lines: [String]) -> String {
        let trimmed = lines.map { String($0.reversed().drop(while: { $0 == " " }).reversed()) }
        let indent = trimmed.filter { !$0.isEmpty }.map { $0.prefix(while: { $0 == " " }).count }.min() ?? 0
        var body = trimmed.map { $0.isEmpty ? "" : String($0.dropFirst(indent)) }
        while body.first == "" { body.removeFirst() }
        while body.last == "" { body.removeLast() }
        return body.joined(separator: "\n")
    }

    /// Where snippets are compiled: the DocSnippets library (type-checked for Apple platforms
    /// too), this target (the snippets that are tests), and the README's first app (an executable).
    static let snippetDirectories = ["Tests/DocSnippets", "Tests/DocSnippetTests", "Tests/FirstAppSnippet"]

    /// The snippet regions of those sources, by name.
    static func regions() throws -> [String: String] {
        var parts: [String: [String]] = [:]
        var order: [String] = []
        var files: [URL] = []
        for folder in snippetDirectories {
            let directory = root.appendingPathComponent(folder)
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() where name.hasSuffix(".swift") {
                files.append(directory.appendingPathComponent(name))
            }
        }
        for file in files {
            let text = try String(contentsOf: file, encoding: .utf8)
            var current: (name: String, lines: [String])?
            for line in text.components(separatedBy: "\n") {
                let marker = line.trimmingCharacters(in: .whitespaces)
                if marker.hasPrefix("// snippet: ") {
                    current = (String(marker.dropFirst("// snippet: ".count)), [])
                } else if marker == "// end snippet", let done = current {
                    if parts[done.name] == nil { order.append(done.name) }
                    parts[done.name, default: []].append(normalised(done.lines))
                    current = nil
                } else if current != nil {
                    current?.lines.append(line)
                }
            }
        }
        return parts.mapValues { $0.joined(separator: "\n\n") }
    }

    @Test func everySwiftBlockOfTheDocsIsCompiledHere() throws {
        let regions = Set(try Self.regions().values)
        var checked = 0
        for document in try Self.documents() {
            let text = try String(contentsOf: document, encoding: .utf8)
            for block in Self.swiftBlocks(text) {
                checked += 1
                if block.code.contains(".package(") {
                    try Self.checkManifestExcerpt(block.code, in: document.lastPathComponent, line: block.line)
                    continue
                }
                let compiled = regions.contains(block.code)
                #expect(
                    compiled,
                    "\(document.lastPathComponent):\(block.line): this snippet is not compiled — copy it into Tests/DocSnippets (Tests/DocSnippetTests if it is a test) between `// snippet: NAME` and `// end snippet`:\n\(block.code)")
            }
        }
        #expect(checked >= 40, "found only \(checked) snippets: is the block syntax still ```swift?")
    }

    /// The dependency line that resolves today (no release is published, so no URL and no
    /// version tag): a clone by path. `.ci/first-app` resolves it in a new package.
    static let installLine = #".package(path: "../FeatureFlags")"#

    /// A `Package.swift` excerpt: it depends on the package the way that resolves today, and
    /// the products it names exist.
    static func checkManifestExcerpt(_ code: String, in document: String, line: Int) throws {
        for match in code.matches(of: /\.package\([^)]*\)/) {
            #expect(String(match.0) == installLine, "\(document):\(line): \(match.0) does not resolve today; use \(installLine)")
        }
        let manifest = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        for match in code.matches(of: /\.product\(name: "([A-Za-z]+)", package: "FeatureFlags"\)/) {
            #expect(manifest.contains(".library(name: \"\(match.1)\""), "\(document):\(line): no product \(match.1)")
        }
    }

    @Test func theVersionIsTheSameInTheChangelogTheReadmeAndTheTool() throws {
        let changelog = try String(contentsOf: Self.root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let newest = changelog.components(separatedBy: "\n").first { $0.hasPrefix("## ") }
        #expect(newest?.hasPrefix("## \(FlagCtl.version) ") == true, "\(newest ?? "no version heading")")
        // The README names the version a published release will carry.
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(readme.contains("from: \"\(FlagCtl.version)\""))
    }

    @Test func theDocsNameNoInternalPlanningDocuments() throws {
        for document in try Self.documents() {
            let text = try String(contentsOf: document, encoding: .utf8)
            for phrase in ["seed 0", "DESIGN §", "DESIGN.md", "seeds/"] {
                let mentions = text.contains(phrase)
                #expect(!mentions, "\(document.lastPathComponent) mentions \"\(phrase)\"")
            }
            let issue = text.firstMatch(of: /\b[Ii]ssue \d+\b/).map { String($0.output) }
            #expect(issue == nil, "\(document.lastPathComponent) names an issue: \(issue ?? "")")
        }
    }

    @Test func statusesPrintAsTheDocsSpellThem() {
        #expect("\(ProviderStatus.notReady)" == "NOT_READY")
        #expect("\(FlagSource.bundledDefaults)" == "bundled_defaults")
    }
}
