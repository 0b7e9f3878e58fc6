import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting
import FlagServer

/// `FeatureFlagProvider.start`: one call that builds the fetcher and the provider and runs its
/// loop on a task of its own until `shutdown()`. Real loopback HTTP.
@Suite("Starting a provider in one call")
struct ProviderStartTests {
    static let user = EvaluationContext(targetingKey: "user-1", attributes: ["venue": "venue-42"])

    @Test func anEndpointOnThisMachineNeedsNoNetworkPath() throws {
        // A development server (`flagctl serve`) answers whether or not the machine has a network:
        // the system's path monitor would say "no path" on a machine without a default route (or
        // a Mac with Wi-Fi off), and nothing would ever be fetched.
        let dir = TempDir()
        let cases: [(urls: [String], thisMachine: Bool)] = [
            (["http://127.0.0.1:8080/flags"], true), (["http://localhost:8080/flags"], true), (["http://[::1]:8080/flags"], true),
            (["http://127.0.0.1:8080/flags", "http://localhost:9090/flags"], true),
            (["https://flags.example.com/flags"], false), (["http://127.0.0.1:8080/flags", "https://flags.example.com/flags"], false),
            (["http://128.0.0.1/flags"], false),
        ]
        for (n, item) in cases.enumerated() {
            let fetcher = FlagFetcher(endpoints: item.urls.map { .json(post: URL(string: $0)!) })
            let provider = FeatureFlagProvider(
                context: Self.user, fetcher: fetcher, store: LastKnownGoodStore(fileURL: dir.url("flags-\(n).lkg")), lifecycle: AlwaysForeground())
            defer { provider.shutdown() }
            #expect(provider.pathIsUp(reported: false) == item.thisMachine, "\(item.urls)")
            #expect(provider.pathIsUp(reported: true))
        }
        // An endpoint that cannot make its request says nothing of where it goes: the system's
        // path decides (the fetch itself will report the error).
        let refusing = FlagEndpoint(
            name: "refusing", request: { _, _ throws(FlagError) in throw FlagError(.general, "no request") },
            decode: { _, _ throws(FlagError) in .flags([:]) })
        let unknown = FeatureFlagProvider(
            context: Self.user, fetcher: FlagFetcher(endpoints: [.json(post: URL(string: "http://127.0.0.1:8080/flags")!), refusing]),
            store: LastKnownGoodStore(fileURL: dir.url("refusing.lkg")), lifecycle: AlwaysForeground())
        defer { unknown.shutdown() }
        #expect(!unknown.pathIsUp(reported: false))
        // The one-call start decides the same way.
        let started = FeatureFlagProvider.start(
            context: Self.user, endpoint: .json(post: URL(string: "http://127.0.0.1:9/flags")!),
            store: LastKnownGoodStore(fileURL: dir.url("started.lkg")))
        defer { started.shutdown() }
        #expect(started.pathIsUp(reported: false))
    }

    @Test func aPathMonitorTheAppGivesIsFollowedEvenForThisMachine() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let dir = TempDir()
        let reachability = ManualReachability(false)
        let provider = FeatureFlagProvider(
            context: Self.user, fetcher: FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: .init(budget: TestTiming.loopbackBudget)),
            store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), reachability: reachability, lifecycle: AlwaysForeground())
        defer { provider.shutdown() }
        #expect(!provider.pathIsUp(reported: false))
        #expect(await provider.refresh() == .skipped("no network path"))
        #expect(server.requestCount == 0)
        reachability.set(true)
        let outcome = await provider.refresh()
        #expect(outcome.isSuccess, "\(outcome)")
    }

    @Test func itServesTheStoredValuesAtOnceThenFetchesAndPollsUntilShutdown() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let dir = TempDir()
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        try store.save(FlagSnapshot(values: ["new_checkout": .bool(false)], version: "stored"), etag: nil, for: Self.user)
        let reachability = ManualReachability(true)
        // Without change streams: a stream's opening asks for a fetch of its own, which would
        // blur the count.
        var configuration = FeatureFlagProvider.Configuration()
        configuration.changeStreams = false
        let provider = FeatureFlagProvider.start(
            context: Self.user, endpoints: [.json(post: server.flagsURL)], fetch: .init(budget: TestTiming.loopbackBudget),
            configuration: configuration, store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), reachability: reachability,
            lifecycle: AlwaysForeground())
        // Served before any network: the stored value, from the fallback.
        #expect(provider.details(FlagKey("new_checkout", default: true)).source == .fallback)
        #expect(await provider.waitUntilReady(timeout: TestTiming.loopbackBudget) == .ready)
        #expect(provider.details(FlagKey("new_checkout", default: false)).source == .network)
        #expect(await eventually { provider.isRunning }, "its own loop runs: nobody called run()")
        let fetches = { server.requests.count }
        #expect(fetches() == 1)
        // The path comes back: the loop it runs takes that in and fetches again.
        reachability.set(false)
        reachability.set(true)
        #expect(await eventually { fetches() >= 2 })
        provider.shutdown()
        #expect(await eventually { !provider.isRunning }, "shutdown() ends the loop")
    }

    @Test func waitUntilReadyReturnsOnceTheAnswerIsInTheFile() async throws {
        // An app (or a tool) that exits right after the first answer finds it at its next
        // launch: readiness is announced after the fallback file was written.
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let dir = TempDir()
        for _ in 0..<5 {
            try? FileManager.default.removeItem(at: dir.url("flags.lkg"))
            let provider = FeatureFlagProvider.start(
                context: Self.user, endpoints: [.json(post: server.flagsURL)], fetch: .init(budget: TestTiming.loopbackBudget),
                configuration: .init(), store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), reachability: ManualReachability(true),
                lifecycle: AlwaysForeground())
            #expect(await provider.waitUntilReady(timeout: TestTiming.loopbackBudget) == .ready)
            provider.shutdown()
            #expect(LastKnownGoodStore(fileURL: dir.url("flags.lkg")).lastKnownGood(for: Self.user) != nil)
        }
    }

    @Test func withTheServiceDownItServesTheFallbackAndSaysError() async throws {
        let dir = TempDir()
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        try store.save(FlagSnapshot(values: ["new_checkout": .bool(true)], version: "stored"), etag: nil, for: Self.user)
        // A port nothing listens on (and nothing else can take while the test runs).
        let refusing = try #require(RefusingPort())
        let url = refusing.url()
        let provider = FeatureFlagProvider.start(
            context: Self.user, endpoints: [.json(post: url)], fetch: .init(budget: TestTiming.loopbackBudget), configuration: .init(),
            store: store, reachability: ManualReachability(true), lifecycle: AlwaysForeground())
        defer { provider.shutdown() }
        #expect(await provider.waitUntilReady(timeout: TestTiming.eventualityBound) == .error)
        withExtendedLifetime(refusing) {}
        let details = provider.details(FlagKey("new_checkout", default: false))
        #expect(details.value == true)
        #expect(details.source == .fallback)
    }

    @Test func aShutdownBeforeTheLoopStartsLeavesNothingRunning() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let dir = TempDir()
        let provider = FeatureFlagProvider.start(
            context: Self.user, endpoints: [.json(post: server.flagsURL)], fetch: .init(), configuration: .init(),
            store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), reachability: ManualReachability(true), lifecycle: AlwaysForeground())
        provider.shutdown()
        // The detached loop, whenever it starts, finds the provider shut down and returns.
        #expect(await eventually { !provider.isRunning })
        #expect(!(await eventually(within: .milliseconds(200)) { provider.isRunning }))
    }
}
