import Foundation
import Testing
import TestSupport

/// README: "Swift 6.0 or later (Xcode 16.0 or later)". This machine has only a newer compiler
/// (6.3.1), which accepts syntax that Swift 6.0 refuses — one `weak let` (Swift 6.2) kept every
/// Xcode 16 from building the package. This test reads every target an app or a developer builds
/// and refuses the constructs newer than Swift 6.0 by their spelling. It checks syntax only: a
/// difference in how 6.0 type-checks (its concurrency checking is stricter in places) needs that
/// compiler (Docs/Architecture.md, "Apple-only code").
@Suite("Source compatible with Swift 6.0")
struct OldestCompilerTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Each construct: why it is refused (the version that brought it), and how it is spelled
    /// in code (comments and string literals removed), or, for `inStrings`, in the raw text.
    /// (Built when asked: a `Regex` is not `Sendable`, so it cannot be a stored static.)
    /// `trigger` is text the construct cannot be without: a file without it is not searched
    /// (regular expressions are slow in a debug build).
    static var newerThanSwift60: [(what: String, trigger: String, pattern: Regex<Substring>, inStrings: Bool)] {
        [
            ("`weak let` (Swift 6.2, SE-0481)", "weak", #/\bweak\s+let\b/#, false),
            ("`nonisolated(nonsending)` (Swift 6.2, SE-0461)", "nonsending", #/nonisolated\(nonsending\)/#, false),
            ("`@concurrent` (Swift 6.2, SE-0461)", "@concurrent", #/@concurrent\b/#, false),
            (
                "`nonisolated` on a type or an extension (Swift 6.1, SE-0449)", "nonisolated",
                #/\bnonisolated\s+(?:(?:public|package|internal|fileprivate|private|final)\s+)*(?:struct|class|enum|actor|protocol|extension)\b/#, false
            ),
            ("an isolated conformance (Swift 6.2, SE-0470)", "Actor", #/:\s*@(?:MainActor|[A-Z][A-Za-z]*Actor)\s+[A-Z]/#, false),
            ("`isolated deinit` (Swift 6.2, SE-0371)", "deinit", #/\bisolated\s+deinit\b/#, false),
            ("`InlineArray` (Swift 6.2, SE-0453)", "InlineArray", #/\bInlineArray\b/#, false),
            ("`Span` (Swift 6.2, SE-0447)", "Span", #/\b(?:RawSpan|MutableSpan|MutableRawSpan)\b|\bSpan</#, false),
            ("`Task.immediate` / a named task (Swift 6.2, SE-0472, SE-0469)", "Task", #/Task\.immediate|Task(?:\.detached)?\s*\(\s*name:/#, false),
            ("a task group without `of:` (Swift 6.1, SE-0442)", "TaskGroup", #/with(?:Throwing)?(?:Discarding)?TaskGroup\s*(?:\{|\(\s*returning:|\(\s*isolation:)/#, false),
            ("a raw identifier (Swift 6.2, SE-0451)", "`", #/`[^`\n]*[^A-Za-z0-9_`\n][^`\n]*`/#, false),
            ("a module selector (SE-0491, not in Swift 6.0)", "::", #/\b[A-Z][A-Za-z0-9_]*::[A-Za-z_]/#, false),
            ("a trailing comma in a call, parameter, tuple or generic list (Swift 6.1, SE-0439)", ",", #/,\s*[)>]/#, false),
            ("a default in an interpolation (Swift 6.2, SE-0477)", "default:", #/\\\([^()\n]*,\s*default:/#, true),
        ]
    }

    /// Every Swift file that apps or the package's tools compile (test targets use Swift
    /// Testing's newer API and are built by contributors with the newest compiler).
    static func files() throws -> [URL] {
        let folders = ["Sources", "Tests/DocSnippets", "Tests/FirstAppSnippet"].map { root.appendingPathComponent($0) }
        var found: [URL] = [root.appendingPathComponent("Package.swift")]
        for folder in folders {
            guard let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) else {
                throw CocoaError(.fileReadNoSuchFile, userInfo: [NSFilePathErrorKey: folder.path])
            }
            for case let url as URL in walker where url.pathExtension == "swift" { found.append(url) }
        }
        return found
    }

    /// `text` without comments and string literals (their insides become empty), so that
    /// prose and data do not count: a deliberately small reader that handles the package's
    /// formatting — `//` and `/* */` comments, `"…"`, `"""…"""` and `#"…"#` strings.
    static func code(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        func matches(_ pattern: String.UTF8View, at j: Int) -> Bool {
            j + pattern.count <= bytes.count && bytes[j..<(j + pattern.count)].elementsEqual(pattern)
        }
        func at(_ s: String) -> Bool { matches(s.utf8, at: i) }
        func find(_ s: String, from start: Int, escapes: Bool) -> Int {
            let pattern = s.utf8
            var j = start
            while j + pattern.count <= bytes.count {
                if escapes, bytes[j] == UInt8(ascii: "\\") {
                    j += 2
                    continue
                }
                if matches(pattern, at: j) { return j }
                j += 1
            }
            return bytes.count
        }
        while i < bytes.count {
            if at("//") {
                while i < bytes.count, bytes[i] != UInt8(ascii: "\n") { i += 1 }
            } else if at("/*") {
                i = min(bytes.count, find("*/", from: i + 2, escapes: false) + 2)
            } else if bytes[i] == UInt8(ascii: "\"") {
                let opening = at("\"\"\"") ? "\"\"\"" : "\""
                let end = find(opening, from: i + opening.count, escapes: true)
                out += Array("\"\"".utf8)
                i = min(bytes.count, end + opening.count)
            } else if at("#\"") {
                let closing = at("#\"\"\"") ? "\"\"\"#" : "\"#"
                let end = find(closing, from: i + closing.count, escapes: false)
                out += Array("\"\"".utf8)
                i = min(bytes.count, end + closing.count)
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    @Test func theReaderSkipsCommentsAndStrings() {
        #expect(Self.code("let a = 1 // weak let b\n/* weak let */ let c = \"weak let\"") == "let a = 1 \n let c = \"\"")
        #expect(Self.code(##"let s = #"a "quoted" weak let"#; let t = "x\"y""##) == #"let s = ""; let t = """#)
        #expect(Self.code("let m = \"\"\"\n  weak let\n  \"\"\"\nf()") == "let m = \"\"\nf()")
    }

    @Test func everyConstructIsRecognised() async throws {
        let samples = [
            "weak let owner: Owner?", "nonisolated(nonsending) func f()", "@concurrent func g()",
            "nonisolated struct S {}", "extension S: @MainActor P {}", "isolated deinit {}", "var a: InlineArray<3, Int>",
            "var s: Span<UInt8>", "Task.immediate { }", "Task(name: n) { }", "withTaskGroup { group in }", "func `a b`() {}",
            "print(\\(x, default: y))", "Swift::print(1)", "f(a, b,)",
        ]
        let fine = [
            "weak var owner: Owner?", "nonisolated func f()", "nonisolated(unsafe) var x = 1", "withTaskGroup(of: Void.self) { _ in }",
            "let a = [1, 2,]", "let d = [1: 2,]", "struct S: Sendable {}", "`default`", "x ? a : b",
            "provider.addHooks(Span())",
        ]
        // The same matcher as the scan, off the threads that run every test's tasks (seconds of
        // regular-expression matching in a debug build would hold one of them).
        let (missed, refused) = try await blocking {
            let constructs = Self.newerThanSwift60
            let finds = { (sample: String) in constructs.contains { !Self.occurrences(of: $0, in: sample, code: sample).isEmpty } }
            return (samples.filter { !finds($0) }, fine.filter(finds))
        }
        #expect(missed.isEmpty, "not recognised: \(missed)")
        #expect(refused.isEmpty, "refused but fine: \(refused)")
    }

    /// The offsets where `construct` occurs: in `code` (comments and strings removed), or in
    /// `raw` for a construct spelled inside strings. Commas are read as bytes (every file has
    /// some); a construct's other expressions run only where its trigger word is.
    static func occurrences(
        of construct: (what: String, trigger: String, pattern: Regex<Substring>, inStrings: Bool), in raw: String, code: String
    ) -> [String.Index] {
        let text = construct.inStrings ? raw : code
        guard text.contains(construct.trigger) else { return [] }
        if construct.trigger == "," {
            return Self.trailingCommas(in: text).map { text.utf8.index(text.utf8.startIndex, offsetBy: $0) }
        }
        return text.matches(of: construct.pattern).map(\.range.lowerBound)
    }

    @Test func noTargetUsesSyntaxNewerThanSwift60() async throws {
        let found = try await blocking { try Self.scan() }
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }

    /// The byte offsets of the commas followed, after white space, by `)` or `>`.
    static func trailingCommas(in text: String) -> [Int] {
        let bytes = Array(text.utf8)
        var found: [Int] = []
        for i in bytes.indices where bytes[i] == UInt8(ascii: ",") {
            var j = i + 1
            while j < bytes.count, bytes[j] == 32 || bytes[j] == 9 || bytes[j] == 10 || bytes[j] == 13 { j += 1 }
            if j < bytes.count, bytes[j] == UInt8(ascii: ")") || bytes[j] == UInt8(ascii: ">") { found.append(i) }
        }
        return found
    }

    /// Every construct newer than Swift 6.0 in the files, as `path:line: what: text`.
    static func scan() throws -> [String] {
        var found: [String] = []
        let files = try Self.files()
        let constructs = Self.newerThanSwift60
        for file in files {
            let raw = try String(contentsOf: file, encoding: .utf8)
            let code = Self.code(raw)
            let name = file.path.replacingOccurrences(of: Self.root.path + "/", with: "")
            for construct in constructs {
                // The whole text, not line by line: a trailing comma sits before a line break.
                let text = construct.inStrings ? raw : code
                for at in Self.occurrences(of: construct, in: raw, code: code) {
                    let line = text[..<at].count { $0 == "\n" } + 1
                    found.append("\(name):\(line): \(construct.what)")
                }
            }
        }
        if files.count < 200 { found.append("the sources were not found (\(files.count) files)") }
        return found
    }
}
