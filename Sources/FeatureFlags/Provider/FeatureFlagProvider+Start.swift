import Foundation

extension FeatureFlagProvider {
    /// A provider for `context` fetching from `endpoint`, already running: serves the stored Last-Known-Good
    /// at once, then fetches and polls on its own task until ``shutdown()``. Keep it for the app's life.
    /// - Parameters:
    ///   - fetch: the fetch budget, headers (credentials) and limits.
    ///   - store: where the Last-Known-Good lives (``LastKnownGoodStore/defaultFileURL(appName:)`` unless given).
    public static func start(
        context: EvaluationContext,
        endpoint: FlagEndpoint,
        fetch: FlagFetcher.Configuration = FlagFetcher.Configuration(),
        configuration: Configuration = Configuration(),
        store: LastKnownGoodStore? = nil
    ) -> FeatureFlagProvider {
        start(context: context, endpoints: [endpoint], fetch: fetch, configuration: configuration, store: store)
    }

    /// A provider over several services, already running: a chain, or a set combined per flag as
    /// `fetch.strategy` says (``ServiceStrategy``); otherwise as ``start(context:endpoint:fetch:configuration:store:)``.
    public static func start(
        context: EvaluationContext,
        endpoints: [FlagEndpoint],
        fetch: FlagFetcher.Configuration = FlagFetcher.Configuration(),
        configuration: Configuration = Configuration(),
        store: LastKnownGoodStore? = nil
    ) -> FeatureFlagProvider {
        start(
            context: context, endpoints: endpoints, fetch: fetch, configuration: configuration, store: store,
            reachability: nil, lifecycle: SystemAppLifecycle.make())
    }

    /// The one start every other calls: the provider, and its run loop on a task of its own.
    static func start(
        context: EvaluationContext, endpoints: [FlagEndpoint], fetch: FlagFetcher.Configuration, configuration: Configuration,
        store: LastKnownGoodStore?, reachability: (any Reachability)?, lifecycle: any AppLifecycle
    ) -> FeatureFlagProvider {
        let provider = FeatureFlagProvider(
            context: context, fetcher: FlagFetcher(endpoints: endpoints, configuration: fetch), store: store ?? LastKnownGoodStore(),
            configuration: configuration, reachability: reachability, lifecycle: lifecycle)
        // Detached: cancelling the caller does not stop polling; `shutdown()` does.
        Task.detached(priority: .utility) { await provider.run() }
        return provider
    }
}
