public import FeatureFlags
public import Foundation

/// Tests that start from a device's past: what an earlier launch left in the fallback file, and
/// a provider started on it in one call.
///
/// ```swift
/// let store = LastKnownGoodStore(fileURL: dir.appendingPathComponent("flags.lkg"))
/// try await store.remember(["new_checkout": true], for: user, version: "v1", age: .seconds(3_600))
/// let flags = FeatureFlagProvider.forTesting(context: user, store: store, reachability: ManualReachability(false))
/// ```
extension LastKnownGoodStore {
    /// Leaves in this store what an earlier launch that fetched `values` for `context` would have
    /// left: the values (as the package's JSON document), `version`, fetched `age` ago, with the
    /// entity tag `etag` of the app's first endpoint (give the app's endpoint as `from` when it is
    /// not a `json` one). Written through a real fetch and the store's own write, so that the
    /// file is exactly what a launch writes. Throws when the values could not be stored.
    public func remember(
        _ values: [String: FlagValue], for context: EvaluationContext, version: String? = nil, age: Duration = .zero,
        etag: String? = nil, from endpoint: FlagEndpoint = .json(post: DevicePast.placeholderURL)
    ) async throws(FetchError) {
        let document = FlagDocument(version: version, flags: values.mapValues { FlagEntry(value: $0) })
        try await rememberAnswer(document.jsonBytes(), for: context, from: endpoint, etag: etag, age: age)
    }

    /// Leaves in this store what an earlier launch left after `endpoint` answered `body` for
    /// `context`, `age` ago: the answer read by `endpoint` as the app's provider reads it — a
    /// signed document (JWS) checked and kept with its signature when `fetch` carries the app's
    /// `trustedKeys`; flagd rules (`.flagd(url:)`) held for evaluation on the device; any other
    /// service's answer decoded by its endpoint. Throws the fetch's error when the answer was
    /// refused (a bad signature, a document the endpoint cannot read): nothing is stored then.
    public func rememberAnswer(
        _ body: [UInt8], for context: EvaluationContext, from endpoint: FlagEndpoint, etag: String? = nil, age: Duration = .zero,
        fetch: FlagFetcher.Configuration = FlagFetcher.Configuration(budget: .seconds(60))
    ) async throws(FetchError) {
        let fetchedAt = Date().addingTimeInterval(-age.seconds)
        let fetcher = FlagFetcher(
            endpoint: endpoint, configuration: fetch, transport: StubTransport.serving(body: body, etag: etag), now: { fetchedAt })
        let launch = FeatureFlagProvider(
            context: context, fetcher: fetcher, store: self, reachability: ManualReachability(true),
            lifecycle: ManualLifecycle(foreground: true), now: { fetchedAt })
        defer {
            launch.shutdown()
            fetcher.shutdown()
        }
        // Returns once the values are on disk; nothing here blocks a thread of the caller's pool.
        // The deadline only ends a hang: a whole parallel run under ThreadSanitizer on two cores
        // has kept every test's tasks waiting for the pool over 120 s.
        let outcome = await launch.refreshInBackground(deadline: .seconds(600))
        if case .failed(let error) = outcome { throw error }
    }
}

extension FeatureFlagProvider {
    /// A provider for a test, in one call: `context` over `store`, fetching from `endpoint` through
    /// `transport` (nil: the network — a loopback server's URL), timed by `clock` (a ``TestClock``:
    /// polls, backoff and budgets wait for `advance`), with the network path and the app's
    /// foreground given by hand. Running (polling on its own task) unless `running` is false — then
    /// it serves what `store` holds and fetches only when asked (`refresh()`) or after `run()`.
    /// Shut it down at the end of the test.
    /// - Parameter fetch: the fetcher's configuration; a generous budget by default (a loaded
    ///   machine must not turn an answer into a timeout), measured on `clock`.
    public static func forTesting(
        context: EvaluationContext = EvaluationContext(targetingKey: "test-user"), store: LastKnownGoodStore,
        endpoint: FlagEndpoint = .json(post: DevicePast.placeholderURL), transport: (any FlagTransport)? = nil,
        fetch: FlagFetcher.Configuration = FlagFetcher.Configuration(budget: .seconds(60)), configuration: Configuration = Configuration(),
        clock: TestClock = TestClock(), reachability: ManualReachability = ManualReachability(true),
        lifecycle: ManualLifecycle = ManualLifecycle(foreground: true), now: @escaping @Sendable () -> Date = { Date() },
        running: Bool = true
    ) -> FeatureFlagProvider {
        let fetcher = FlagFetcher(endpoint: endpoint, configuration: fetch, transport: transport, clock: clock, now: now)
        let provider = FeatureFlagProvider(
            context: context, fetcher: fetcher, store: store, configuration: configuration, reachability: reachability,
            lifecycle: lifecycle, clock: clock, now: now)
        if running { Task.detached { await provider.run() } }
        return provider
    }
}

/// Constants of the device-past fixtures.
public enum DevicePast {
    /// The URL fixtures use when no request is meant to reach a server: the discard port of
    /// this machine (a request there fails at once).
    public static let placeholderURL = URL(string: "http://127.0.0.1:9/flags")!
}
