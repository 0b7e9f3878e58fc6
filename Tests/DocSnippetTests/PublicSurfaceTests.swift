import Foundation
import Testing

/// The core library's public surface stays small enough for a newcomer to hold: at most 50
/// public types (every `public` class, struct, enum, protocol, actor and typealias, nested
/// included), as Docs/Architecture.md and the CHANGELOG state. A new public type means another
/// one goes (a static member, a tuple, a `package` type) — or this number is argued anew.
@Suite("The public surface")
struct PublicSurfaceTests {
    static let budget = 50

    /// The names of the public types `text` declares (the `grep` of the issue that set the budget).
    static func publicTypeNames(_ text: String) -> [String] {
        let declaration = /^\s*public\s+(?:final\s+|indirect\s+)?(?:class|struct|enum|protocol|actor|typealias)\s+([A-Za-z_]\w*)/
            .anchorsMatchLineEndings()
        return text.matches(of: declaration).map { String($0.output.1) }
    }

    /// Every public type declaration of the core library, as `File.swift: Name`.
    static func publicTypes() throws -> [String] {
        try LayerTableTests.swiftFiles(under: LayerTableTests.core).flatMap { file in
            publicTypeNames(file.text).map { "\(file.path): \($0)" }
        }
    }

    @Test func theCoreLibraryExportsAtMostFiftyTypes() throws {
        let types = try Self.publicTypes()
        #expect(types.count <= Self.budget, "\(types.count) public types:\n\(types.joined(separator: "\n"))")
    }

    @Test func theCountSeesNestedAndTopLevelTypes() {
        let sample = "public struct A {\n    public enum B { case x }\n    package struct C {}\n}\npublic typealias D = Int\n"
        #expect(Self.publicTypeNames(sample) == ["A", "B", "D"])
    }
}
