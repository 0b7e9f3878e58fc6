import FeatureFlags
import Foundation
import Testing

func bundledDefaultsInCode() {
    // snippet: BundledDefaults values
    let configuration = FeatureFlagProvider.Configuration(
        bundledDefaults: .values(["new_checkout": false, "max_cart_items": 50]))
    // end snippet
    _ = configuration
}

func bundledDefaultsFile(fetcher: FlagFetcher, store: LastKnownGoodStore) {
    // snippet: BundledDefaults file
    let url = Bundle.main.url(forResource: "flag-defaults", withExtension: "json")!
    let flags = FeatureFlagProvider(context: user, fetcher: fetcher, store: store,
                                    configuration: .init(bundledDefaults: .jsonFile(url)))
    // end snippet
    flags.shutdown()
}

// snippet: BundledDefaults test
@Test func theBundledDefaultsAreUsable() throws {
    let url = try #require(Bundle.module.url(forResource: "flag-defaults", withExtension: "json"))
    let client = FallbackClient(fileURL: temporaryDirectory.appendingPathComponent("t.lkg"),
                                bundledDefaults: .jsonFile(url))
    #expect(!client.recentEvents.contains { $0.kind == .error })
    #expect(client.details(.newCheckout).source == .bundledDefaults)
}
// end snippet
