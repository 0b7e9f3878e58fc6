import FeatureFlags
import FeatureFlagsFlagd
import FeatureFlagsSigning
import Foundation

func productionSignedDocument() {
    // snippet: Production signed document
    let fetch = FlagFetcher.Configuration(trustedKeys: ["ops-2026": bundledPEM("ops-2026.pub.pem")])
    let flags = FeatureFlagProvider.start(
        context: user, endpoint: .json(get: URL(string: "https://cdn.example.com/flags/flags.jws")!), fetch: fetch)
    // end snippet
    flags.shutdown()
}

func productionFlagdRollout() {
    // snippet: Production flagd rollout
    let rollout = FeatureFlagProvider.start(
        context: user,   // its targetingKey: the signed-in user's stable id
        endpoint: FlagEndpoint.flagd(url: URL(string: "https://cdn.example.com/flags/flagd.json")!))
    let showsNewCheckout = rollout.value(.newCheckout)   // the same answer for this user on every launch
    // end snippet
    _ = showsNewCheckout
    rollout.shutdown()
}
