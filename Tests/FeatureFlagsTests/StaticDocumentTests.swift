import FeatureFlags
import FeatureFlagsTesting
import Foundation
import Testing
import TestSupport

/// A static document — the same for every device — fetched by GET from a host that answers
/// nothing else (as a CDN, an object store or `python3 -m http.server` do).
@Suite("A static document by GET")
struct StaticDocumentTests {
    static let document = #"{"meta_config_version": "static-1", "flags": {"new_checkout": {"value": true}}}"#
    static let newCheckout = FlagKey("new_checkout", default: false)

    @Test(.hangLimit())
    func aStaticDocumentIsFetchedByGetThenRevalidated() async throws {
        let host = try StaticHost(files: ["/flags.json": Self.document])
        defer { host.stop() }
        let dir = TempDir()
        let fetcher = FlagFetcher(endpoint: .json(get: host.url("flags.json")), configuration: .loopback)
        defer { fetcher.shutdown() }
        let provider = FeatureFlagProvider(
            context: EvaluationContext(targetingKey: "u1"), fetcher: fetcher, store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")),
            reachability: ManualReachability(true), lifecycle: ManualLifecycle(foreground: true))
        defer { provider.shutdown() }
        let first = await provider.refresh()
        #expect(first.isSuccess, "\(first)")
        #expect(provider.value(Self.newCheckout) && provider.snapshot.version == "static-1")
        // Unchanged: a conditional GET, answered 304.
        #expect(await provider.refresh() == .unchanged)
        host.set("/flags.json", #"{"meta_config_version": "static-2", "flags": {"new_checkout": {"value": false}}}"#)
        #expect(await provider.refresh().isSuccess)
        #expect(!provider.value(Self.newCheckout) && provider.snapshot.version == "static-2")
        #expect(host.requests == ["GET /flags.json", "GET /flags.json", "GET /flags.json"])
    }

    @Test(.hangLimit())
    func postingTheContextToAStaticHostFailsClearly() async throws {
        let host = try StaticHost(files: ["/flags.json": Self.document])
        defer { host.stop() }
        let fetcher = FlagFetcher(endpoint: .json(post: host.url("flags.json")), configuration: .loopback)
        defer { fetcher.shutdown() }
        let dir = TempDir()
        let provider = FeatureFlagProvider(
            context: EvaluationContext(targetingKey: "u1"), fetcher: fetcher, store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")),
            reachability: ManualReachability(true), lifecycle: ManualLifecycle(foreground: true))
        defer { provider.shutdown() }
        guard case .failed(let error) = await provider.refresh() else {
            Issue.record("a POST to a static host was answered")
            return
        }
        #expect(error.kind == .httpStatus && error.httpStatus == 501, "\(error)")
        #expect(host.requests == ["POST /flags.json"])
        #expect(!provider.value(Self.newCheckout))
    }
}
