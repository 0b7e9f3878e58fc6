import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting
import FlagServer

/// Everything a provider test needs: a loopback server on the demo document, a
/// Last-Known-Good store in a temporary directory, a test clock (for the provider's schedule and, unless a
/// real deadline is asked for, the online client's deadline), manual reachability and a
/// seeded random source.
final class ProviderFixture: Sendable {
    let server: FlagServer
    let dir: TempDir
    let clock: TestClock
    let reachability: ManualReachability
    let endpoint: CountingEndpoint
    let fetcher: FlagFetcher
    let store: LastKnownGoodStore
    let provider: FeatureFlagProvider
    let start = Date(timeIntervalSince1970: 1_750_000_000)

    var fallbackURL: URL { dir.url("flags.lkg") }

    init(
        context: EvaluationContext = auraPersonal, reachable: Bool = true, document: ServerDocument = .seedExample,
        server existing: FlagServer? = nil, dir existingDir: TempDir? = nil, transport: (any FlagTransport)? = nil,
        configuration: FeatureFlagProvider.Configuration = .init(), seed: UInt64 = 1, streams: Bool = false,
        lifecycle: any AppLifecycle = AlwaysForeground(), fetch: FlagFetcher.Configuration = .init()
    ) throws {
        // Polling, backoff and validation are tested without change streams (their requests
        // would blur the counts); the streaming suites turn them on.
        var configuration = configuration
        configuration.changeStreams = streams
        server = try existing ?? FlagServer(document: document)
        dir = existingDir ?? TempDir()
        clock = TestClock()
        reachability = ManualReachability(reachable)
        endpoint = CountingEndpoint(FlagEndpoint.json(post: server.flagsURL))
        let clock = self.clock
        let start = self.start
        let now: @Sendable () -> Date = { start.addingTimeInterval(clock.now.offset.seconds) }
        fetcher = FlagFetcher(endpoint: endpoint, configuration: fetch, transport: transport, clock: clock, now: now)
        store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        provider = FeatureFlagProvider(
            context: context, fetcher: fetcher, store: store, configuration: configuration, reachability: reachability,
            lifecycle: lifecycle, clock: clock, now: now, random: SplitMix(seed: seed))
    }

    /// Starts `run()` in a task.
    func run() -> Task<Void, Never> {
        let provider = self.provider
        return Task { await provider.run() }
    }

    /// Shuts the provider down and stops the server.
    func stop() {
        provider.shutdown()
        server.stop()
    }
}

extension ServerDocument {
    /// The seeds' document with `changes` applied to its defaults and its plan rules removed, so
    /// the defaults are what every context gets.
    static func seedDefaults(_ changes: [String: FlagValue]) -> ServerDocument {
        var document = ServerDocument.seedExample
        for (name, value) in changes { document.base.flags[name] = FlagEntry(value: value) }
        document.rules.removeAll()
        return document
    }
}

/// Saves `values` as `context`'s Last-Known-Good (version `lkg`) in `dir`'s fallback file.
func seedFallback(
    _ dir: TempDir, _ values: [String: FlagValue], for context: EvaluationContext = auraPersonal, ttl: TimeInterval = 86_400,
    etag: EntityTag? = nil
) throws {
    try LastKnownGoodStore(fileURL: dir.url("flags.lkg")).save(
        FlagSnapshot(values: values, version: "lkg", fetchedAt: Date(timeIntervalSince1970: 1_750_000_000), ttl: ttl),
        etag: etag, for: context)
}

/// A transport that performs real HTTP through URLSession, but only when the test releases
/// the request's context — and then ignores cancellation, like a slow network that delivers
/// answers nobody waits for any more.
final class GatedTransport: FlagTransport {
    private let inner = URLSessionTransport()
    private let state = Locked<(held: Set<String>, waiting: [(String, CheckedContinuation<Void, Never>)])>(([], []))

    func hold(_ context: EvaluationContext) { state.withLock { _ = $0.held.insert(context.fingerprint) } }

    func release(_ context: EvaluationContext) {
        let ready = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.held.remove(context.fingerprint)
            let ready = s.waiting.filter { $0.0 == context.fingerprint }.map(\.1)
            s.waiting.removeAll { $0.0 == context.fingerprint }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// Requests waiting at the gate now.
    var waitingCount: Int { state.withLock { $0.waiting.count } }

    func send(_ request: FlagRequest, maxBytes: Int, timeout: TimeInterval) async throws(FetchError) -> FlagResponse {
        let body = (try? FlagJSON.parse(request.body ?? [])) ?? .null
        let fingerprint = body.objectValue?["context"].flatMap(EvaluationContext.init(flagValue:))?.fingerprint ?? ""
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let held = state.withLock { s -> Bool in
                guard s.held.contains(fingerprint) else { return false }
                s.waiting.append((fingerprint, continuation))
                return true
            }
            if !held { continuation.resume() }
        }
        let inner = self.inner
        let result = await Task.detached { () -> Result<FlagResponse, FetchError> in
            do throws(FetchError) {
                return .success(try await inner.send(request, maxBytes: maxBytes, timeout: timeout))
            } catch {
                return .failure(error)
            }
        }.value
        return try result.get()
    }

    func shutdown() { inner.shutdown() }
}

/// Real HTTP through URLSession, with every `ETag` removed from the answers: a service that
/// does not do conditional requests.
final class ETagStrippingTransport: FlagTransport {
    private let inner = URLSessionTransport()

    func send(_ request: FlagRequest, maxBytes: Int, timeout: TimeInterval) async throws(FetchError) -> FlagResponse {
        var response = try await inner.send(request, maxBytes: maxBytes, timeout: timeout)
        response.headers["etag"] = nil
        return response
    }

    func shutdown() { inner.shutdown() }
}
