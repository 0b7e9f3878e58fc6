import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting

/// Docs/Architecture.md states how many locks a provider makes; this counts them in the code.
@Suite("Lock count")
struct LockCountTests {
    /// The number the guide states, from its line "**A running provider makes N locks**".
    static func statedCount() throws -> Int {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("Docs/Architecture.md"), encoding: .utf8)
        let marker = "**A running provider makes "
        let start = try #require(text.range(of: marker))
        let digits = text[start.upperBound...].prefix { $0.isNumber }
        return try #require(Int(digits))
    }

    @Test func aProviderMakesTheLocksTheArchitectureGuideCounts() throws {
        let dir = TempDir()
        let context = EvaluationContext(targetingKey: "user-1")
        // Process-wide state (thread caches, shared key conversions, the unattached hooks) is set
        // up by a first provider, not counted.
        let warm = FeatureFlagProvider(
            context: context, fetcher: FlagFetcher(endpoint: .json(post: URL(string: "http://127.0.0.1:9/flags")!)),
            store: LastKnownGoodStore(fileURL: dir.url("warm.lkg")), reachability: AlwaysReachable(), lifecycle: AlwaysForeground())
        warm.shutdown()
        var provider: FeatureFlagProvider?
        let made = LockCensus.count {
            let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
            let fetcher = FlagFetcher(endpoint: .json(post: URL(string: "http://127.0.0.1:9/flags")!))
            provider = FeatureFlagProvider(
                context: context, fetcher: fetcher, store: store, reachability: AlwaysReachable(), lifecycle: AlwaysForeground())
        }
        provider?.shutdown()
        #expect(try made == Self.statedCount(), "the code makes \(made) locks")
    }
}
