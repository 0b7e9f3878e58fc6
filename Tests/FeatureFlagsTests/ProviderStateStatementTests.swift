import Foundation
import Testing
import TestSupport
@testable import FeatureFlags

/// Docs/Architecture.md says what a provider holds beside its state and how its state changes;
/// these tests hold those sentences to the code.
@Suite("The provider's state, as the architecture guide states it")
struct ProviderStateStatementTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The names the guide lists after "the provider holds only collaborators and constants".
    static func statedHoldings() throws -> [String] {
        let text = try String(contentsOf: root.appendingPathComponent("Docs/Architecture.md"), encoding: .utf8)
        let start = try #require(text.range(of: "the provider holds\nonly collaborators and constants, set once at its start: ")
            ?? text.range(of: "the provider holds only collaborators and constants, set once at its start: "))
        let sentence = text[start.upperBound...].prefix { $0 != "." }
        return sentence.matches(of: /`([A-Za-z]+)`/).map { String($0.output.1) }
    }

    @Test func theProviderHoldsItsStateAndOnlyTheCollaboratorsTheGuideNames() throws {
        let dir = TempDir()
        let provider = FeatureFlagProvider(
            context: EvaluationContext(targetingKey: "u"),
            fetcher: FlagFetcher(endpoint: .json(post: URL(string: "http://127.0.0.1:9/flags")!)),
            store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), reachability: AlwaysReachable(), lifecycle: AlwaysForeground())
        defer { provider.shutdown() }
        let stored = Mirror(reflecting: provider).children.compactMap(\.label).sorted()
        let stated = try Self.statedHoldings()
        #expect(stated.count >= 10, "the guide's list was not read: \(stated)")
        #expect(stored == (["cell"] + stated).sorted(), "stored: \(stored)")
    }

    @Test func outsideItsTransitionsTheStateIsOnlyChangedByApply() throws {
        let folder = Self.root.appendingPathComponent("Sources/FeatureFlags")
        let walker = try #require(FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil))
        var uses = 0
        for case let url as URL in walker where url.pathExtension == "swift" && !url.lastPathComponent.hasPrefix("ProviderState") {
            let text = try String(contentsOf: url, encoding: .utf8)
            guard text.contains("ServingCell<ProviderState>") || text.contains("extension FeatureFlagProvider") else { continue }
            for match in text.matches(of: /cell\.withLock\s*\(?\{([^\n]*)/) {
                uses += 1
                #expect(match.output.1.trimmingCharacters(in: .whitespaces).hasPrefix("$0.apply("),
                        "\(url.lastPathComponent): `cell.withLock {\(match.output.1)` changes the state outside a transition")
            }
        }
        #expect(uses >= 1, "the transition's own withLock was not found")
    }
}
