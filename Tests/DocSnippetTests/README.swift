// snippet: README tests
import FeatureFlagsTesting
// end snippet
@testable import DocSnippets
import FeatureFlags
import Testing

@Test func readmeInMemoryClient() {
    // snippet: README tests
    let flags = InMemoryFlagClient(["new_checkout": true])
    let model = CheckoutViewModel(flags: flags)
    #expect(model.showsNewCheckout)
    // end snippet
}
