// snippet: README keys
import FeatureFlags
import Foundation
// end snippet
import FeatureFlagsUI

// snippet: README keys
extension FlagKey where Value == Bool {
    static let newCheckout = FlagKey("new_checkout", default: false)
}

enum Theme: String, Sendable { case light, dark }
extension FlagKey where Value == Theme {
    static let theme = FlagKey("theme", default: .light)
}
// end snippet

// snippet: README view model
final class CheckoutViewModel {
    private let flags: any FeatureFlagClient
    init(flags: any FeatureFlagClient) { self.flags = flags }

    var showsNewCheckout: Bool { flags.value(.newCheckout) }
}
// end snippet

func readmeLaunch() async {
    // snippet: README launch
    let user = EvaluationContext(targetingKey: "user-1", attributes: ["venue": "venue-42", "plan": "business"])
    let provider = FeatureFlagProvider.start(                       // serves, fetches, polls until shutdown()
        context: user,
        endpoint: .json(post: URL(string: "https://flags.example.com/flags")!),
        fetch: .init(headers: ["Authorization": "Bearer …"]),
        configuration: .init(bundledDefaults: .values(["new_checkout": false])))
    let status = await provider.waitUntilReady(timeout: .seconds(2)) // splash screen

    let checkout = CheckoutViewModel(flags: provider)               // inject the protocol

    provider.identify(user.with("venue", "venue-7"))                // venue change → one re-fetch

    // Why a value is what it is:
    let d = provider.details(.newCheckout)
    print(d.value, d.source, d.reason, d.snapshotVersion ?? "-", d.age ?? 0)
    // end snippet
    _ = (status, checkout)
}

func readmeOverrides() throws {
    // snippet: README overrides
    let overrides = FlagOverrides(allowed: BuildSettings.allowsFlagOverrides)  // false in release builds
    let configuration = FeatureFlagProvider.Configuration(overrides: overrides)   // build the provider with it
    try overrides.override(.newCheckout, true)                        // survives relaunch; the kill switch still wins
    // end snippet
    _ = configuration
}
