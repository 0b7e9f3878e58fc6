import FeatureFlags
import Foundation

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
