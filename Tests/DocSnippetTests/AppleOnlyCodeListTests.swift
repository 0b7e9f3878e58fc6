import Foundation
import Testing
import TestSupport

/// Docs/Architecture.md lists every file with lines only an Apple build compiles ("Apple-only
/// code"): a file of `Sources/` with code (not just an import) in an `#if` branch that only an
/// Apple platform takes must be named in that section, so the list stays true.
@Suite("The list of Apple-only code")
struct AppleOnlyCodeListTests {
    static let root = DocSnippetCoverageTests.root

    /// A condition only Apple platforms satisfy: it names one of their frameworks or OSes and
    /// none of Linux's.
    static func isAppleOnly(_ condition: Substring) -> Bool {
        let apple = condition.contains(/canImport\((Darwin|UIKit|AppKit|WatchKit|Network|Combine|SwiftUI|BackgroundTasks)\)|os\((iOS|macOS|tvOS|watchOS|visionOS)\)/)
        let linux = condition.contains(/os\(Linux\)|canImport\((Glibc|Musl|FoundationNetworking)\)/)
        return apple && !linux
    }

    /// Whether `text` has a line of code inside a branch only Apple platforms take.
    static func hasAppleOnlyCode(_ text: String) -> Bool {
        var branches: [Bool] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.drop { $0 == " " }
            if trimmed.hasPrefix("#if ") {
                branches.append(isAppleOnly(trimmed))
            } else if trimmed.hasPrefix("#elseif ") {
                if !branches.isEmpty { branches[branches.count - 1] = isAppleOnly(trimmed) }
            } else if trimmed.hasPrefix("#else") {
                if !branches.isEmpty { branches[branches.count - 1] = false }
            } else if trimmed.hasPrefix("#endif") {
                _ = branches.popLast()
            } else if branches.contains(true), !trimmed.isEmpty, !trimmed.hasPrefix("//"),
                      !trimmed.hasPrefix("import "), !trimmed.hasPrefix("@preconcurrency import ") {
                return true
            }
        }
        return false
    }

    @Test func everyFileWithAppleOnlyCodeIsListed() async throws {
        // Off the global executor's threads: loopback tests beside it need them.
        try await blocking {
            let architecture = try String(contentsOf: Self.root.appendingPathComponent("Docs/Architecture.md"), encoding: .utf8)
            let start = try #require(architecture.range(of: "## Apple-only code"))
            let section = architecture[start.upperBound...]
            let end = section.range(of: "\n## ")?.lowerBound ?? section.endIndex
            let listed = section[..<end]
            let sources = Self.root.appendingPathComponent("Sources")
            let walker = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
            var found = 0
            for case let url as URL in walker where url.pathExtension == "swift" {
                guard Self.hasAppleOnlyCode(try String(contentsOf: url, encoding: .utf8)) else { continue }
                found += 1
                // Named as in the table: relative to its module's folder, or with the module's name.
                let parts = url.path.dropFirst(sources.path.count + 1).split(separator: "/")
                let inModule = parts.dropFirst().joined(separator: "/")
                let withModule = parts.joined(separator: "/")
                #expect(listed.contains("`\(inModule)`") || listed.contains("`\(withModule)`"),
                        "Sources/\(withModule) has lines only an Apple build compiles; list it in Docs/Architecture.md (Apple-only code)")
            }
            #expect(found >= 10, "found only \(found) files: has the scan stopped recognising the conditions?")
        }
    }

    @Test func theScanRecognisesAppleOnlyBranches() {
        #expect(Self.hasAppleOnlyCode("#if os(iOS)\nlet x = 1\n#endif"))
        #expect(Self.hasAppleOnlyCode("#if canImport(Glibc)\nimport Glibc\n#elseif canImport(Darwin)\nlet x = 1\n#endif"))
        #expect(!Self.hasAppleOnlyCode("#if canImport(Glibc)\nimport Glibc\n#elseif canImport(Darwin)\nimport Darwin\n#endif"))
        #expect(!Self.hasAppleOnlyCode("#if os(Linux) || os(macOS)\nlet x = 1\n#endif"))
        #expect(!Self.hasAppleOnlyCode("#if canImport(Darwin)\nimport Darwin\n#else\nlet x = 1\n#endif"))
    }
}
