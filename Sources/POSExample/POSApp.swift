public import FeatureFlags
public import Foundation

/// The composition root: the one place that knows which client stands behind the protocol.
/// Modules get `any FeatureFlagClient`; the app gets a `FeatureFlagProvider`; tests get
/// whatever they build.
public struct POSApp: Sendable {
    /// The flags every module reads.
    public let flags: any FeatureFlagClient
    /// Networking.
    public let orders: OrderRequestBuilder
    /// Storage.
    public let receipts: ReceiptStore
    /// View-model.
    public let checkout: CheckoutViewModel

    /// Wires the modules to `flags`.
    public init(flags: any FeatureFlagClient, apiBaseURL: URL) {
        self.flags = flags
        orders = OrderRequestBuilder(baseURL: apiBaseURL, flags: flags)
        receipts = ReceiptStore(flags: flags)
        checkout = CheckoutViewModel(flags: flags)
    }

    /// The production wiring: the Last-Known-Good from `stateDirectory` at once, then the
    /// flag service at `flagsURL`, each fetch within `fetchBudget`. Call `run()` on the returned
    /// provider to start polling.
    public static func live(
        venue: String, user: String, flagsURL: URL, apiBaseURL: URL, stateDirectory: URL,
        reachability: (any Reachability)? = nil, fetchBudget: Duration = .seconds(2)
    ) -> (app: POSApp, provider: FeatureFlagProvider) {
        let context = EvaluationContext(targetingKey: user, attributes: [EvaluationContext.Attribute.venue: .string(venue)])
        let store = LastKnownGoodStore(fileURL: stateDirectory.appendingPathComponent("flags.lkg"))
        let fetcher = FlagFetcher(endpoint: .json(post: flagsURL), configuration: .init(budget: fetchBudget))
        let provider = FeatureFlagProvider(context: context, fetcher: fetcher, store: store, reachability: reachability)
        return (POSApp(flags: provider, apiBaseURL: apiBaseURL), provider)
    }
}
