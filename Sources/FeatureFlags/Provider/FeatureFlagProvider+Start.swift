import Foundation

extension FeatureFlagProvider {
    // MARK: Starting in one call

    /// A provider for `context` that fetches from `endpoint`, already running: it serves the
    /// Last-Known-Good stored for `context` at once (synchronously, no network), fetches, and
    /// polls every ``Configuration/pollInterval`` on a task of its own — following the network
    /// path and the app's foreground and background — until ``shutdown()``.
    ///
    /// ```swift
    /// let flags = FeatureFlagProvider.start(
    ///     context: EvaluationContext(targetingKey: "user-1"),
    ///     endpoint: .json(post: URL(string: "https://flags.example.com/flags")!))
    /// ```
    ///
    /// Everything else is the default: the fallback file in the app's own folder
    /// (``LastKnownGoodStore/defaultFileURL(appName:)``), the system's reachability (none for an
    /// endpoint on this machine) and app lifecycle, a 2-second fetch budget. The long form — ``init(context:fetcher:store:configuration:reachability:lifecycle:clock:now:random:)``
    /// and ``run()`` — is for tests and unusual setups. A provider started here is kept alive by
    /// its own task until ``shutdown()``; keep it for the life of the app.
    /// - Parameters:
    ///   - fetch: the fetch budget, headers (credentials) and limits.
    ///   - configuration: poll interval, kill switch key, bundled defaults, schema, hooks….
    ///   - store: where the Last-Known-Good lives (the app's default file unless given).
    public static func start(
        context: EvaluationContext,
        endpoint: FlagEndpoint,
        fetch: FlagFetcher.Configuration = FlagFetcher.Configuration(),
        configuration: Configuration = Configuration(),
        store: LastKnownGoodStore? = nil
    ) -> FeatureFlagProvider {
        start(
            context: context, endpoint: endpoint, fetch: fetch, configuration: configuration, store: store,
            reachability: nil, lifecycle: SystemAppLifecycle.make())
    }

    /// ``start(context:endpoint:fetch:configuration:store:)`` with the path monitor and the
    /// lifecycle given (tests).
    static func start(
        context: EvaluationContext, endpoint: FlagEndpoint, fetch: FlagFetcher.Configuration, configuration: Configuration,
        store: LastKnownGoodStore?, reachability: (any Reachability)?, lifecycle: any AppLifecycle
    ) -> FeatureFlagProvider {
        let provider = FeatureFlagProvider(
            context: context, fetcher: FlagFetcher(endpoint: endpoint, configuration: fetch), store: store ?? LastKnownGoodStore(),
            configuration: configuration, reachability: reachability, lifecycle: lifecycle)
        // Not a child of the caller's task: cancelling the caller does not stop the polling;
        // `shutdown()` does (run() returns at its next step).
        Task.detached(priority: .utility) { await provider.run() }
        return provider
    }
}
