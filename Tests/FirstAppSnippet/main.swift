// The README's first app, as its main.swift: built with every `swift build`, so the snippet
// compiles as written; `.ci/first-app` runs it against `flagctl serve` in a package of its own.
// snippet: README first app
import FeatureFlags
import Foundation

extension FlagKey where Value == Bool {
    static let newCheckout = FlagKey("new_checkout", default: false)
}
extension FlagKey where Value == Int {
    static let maxCartItems = FlagKey("max_cart_items", default: 20)
}

let endpoint = URL(string: "http://127.0.0.1:8080/flags")!
let user = EvaluationContext(targetingKey: "user-1", attributes: ["venue": "venue-42"])
let provider = FeatureFlagProvider.start(                         // serves, fetches and polls
    context: user, endpoint: .json(post: endpoint),
    store: LastKnownGoodStore(fileURL: URL(fileURLWithPath: "flags.lkg")))  // the fallback file, here

let status = await provider.waitUntilReady(timeout: .seconds(2))  // the first fetch's answer
let details = provider.details(.newCheckout)
print("status \(status)")
print("new_checkout \(details.value) from \(details.source) (\(details.reason))")
print("max_cart_items \(provider.value(.maxCartItems))")
provider.shutdown()
// end snippet
