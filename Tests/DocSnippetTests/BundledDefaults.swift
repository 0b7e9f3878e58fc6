@testable import DocSnippets
import FeatureFlags
import Foundation
import Testing

// snippet: BundledDefaults test
@Test func theBundledDefaultsAreUsable() throws {
    let url = try #require(Bundle.module.url(forResource: "flag-defaults", withExtension: "json"))
    let client = FallbackClient(fileURL: temporaryDirectory.appendingPathComponent("t-\(UUID()).lkg"),
                                bundledDefaults: .jsonFile(url))
    #expect(!client.recentEvents.contains { $0.kind == .error })
    #expect(client.details(.newCheckout).source == .bundledDefaults)
}
// end snippet
