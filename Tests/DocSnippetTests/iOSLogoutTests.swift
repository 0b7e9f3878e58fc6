@testable import DocSnippets
@testable import FeatureFlags
import FeatureFlagsTesting
import Foundation
import Testing

/// The iOS guide's sign-out snippet, run.
@Test func iOSLogoutServesTheAnonymousContextAndForgetsTheUser() throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ios-snippet-\(UUID())")
    defer { try? FileManager.default.removeItem(at: dir) }
    let store = LastKnownGoodStore(fileURL: dir.appendingPathComponent("flags.lkg"))
    let signedIn = EvaluationContext(targetingKey: "user-1", attributes: ["venue": "venue-7"])
    try store.save(FlagSnapshot(values: ["express_checkout": true], version: "v1", fetchedAt: Date(), ttl: nil), etag: nil, for: signedIn)
    let flags = FeatureFlagProvider(
        context: signedIn, fetcher: FlagFetcher(endpoint: .json(post: URL(string: "http://127.0.0.1:9/flags")!)), store: store,
        reachability: ManualReachability(false), lifecycle: ManualLifecycle())
    defer { flags.shutdown() }
    #expect(flags.value(.expressCheckout))
    try userChanged(to: nil, flags: flags, store: store, previous: signedIn)
    #expect(!flags.value(.expressCheckout))
    #expect(store.lastKnownGood(for: signedIn) == nil)
}
