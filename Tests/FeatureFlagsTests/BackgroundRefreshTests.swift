import FeatureFlags
import FeatureFlagsTesting
import FlagServer
import Foundation
import Testing
import TestSupport

/// `refreshInBackground(deadline:)`: one call for a background wake-up — it fetches in the
/// background state, stores before it returns, opens no stream, and answers by its deadline.
@Suite("Background refresh")
struct BackgroundRefreshTests {
    static func killed(_ on: Bool, version: String) -> ServerDocument {
        var document = ServerDocument.seedExample
        document.base.flags["kill_switch"] = FlagEntry(value: .bool(on))
        document.base.version = version
        return document
    }

    @Test func aBackgroundLaunchFetchesOnlyWhenAskedStoresAndOpensNoStream() async throws {
        let lifecycle = ManualLifecycle(foreground: false)
        let f = try ProviderFixture(streams: true, lifecycle: lifecycle)
        defer { f.stop() }
        f.server.document = Self.killed(true, version: "bg-1")
        let loop = f.run()
        defer { loop.cancel() }
        // Launched in the background: nothing is fetched on its own.
        try await Task.sleep(for: .milliseconds(100))
        #expect(f.server.requestCount == 0)
        let outcome = await f.provider.refreshInBackground(deadline: .seconds(5))
        #expect(outcome.isSuccess, "\(outcome)")
        #expect(f.provider.isKillSwitchActive)
        // Stored before it returned: another reader of the file (an extension) sees the kill.
        let reader = FallbackClient(fileURL: f.store.fileURL)
        #expect(reader.isKillSwitchActive)
        // No stream in the background, although the answer advertised one.
        try await Task.sleep(for: .milliseconds(100))
        #expect(f.server.streamCount == 0 && f.provider.openStreamCount == 0)
        #expect(f.server.requests.allSatisfy { $0.route != "GET /events" })
        // The foreground opens it, after an unconditional fetch.
        let before = f.server.requestCount
        lifecycle.set(foreground: true)
        #expect(await eventually(within: TestTiming.loopbackBudget) {
            f.server.streamCount == 1 && f.server.requests.dropFirst(before).contains { $0.route != "GET /events" }
        })
        let resumed = try #require(f.server.requests.dropFirst(before).first { $0.route != "GET /events" })
        #expect(resumed.ifNoneMatch == nil, "the first fetch in the foreground is unconditional")
    }

    @Test func itAnswersAtItsDeadlineAndTheFetchStillLands() async throws {
        let f = try ProviderFixture(lifecycle: ManualLifecycle(foreground: false))
        defer { f.stop() }
        f.server.document = Self.killed(true, version: "slow")
        // (Below the transport's own 2 s timeout, so the fetch can still land.)
        f.server.latency = .milliseconds(1_500)
        let started = ContinuousClock.now
        let outcome = await f.provider.refreshInBackground(deadline: .milliseconds(150))
        let waited = ContinuousClock.now - started
        guard case .failed(let error) = outcome else {
            Issue.record("expected a timeout, got \(outcome)")
            return
        }
        #expect(error.kind == .timeout && !outcome.isSuccess)
        #expect(waited < .milliseconds(1_400), "answered at the deadline, not at the fetch's end (\(waited))")
        #expect(!f.provider.isKillSwitchActive)
        // The fetch was not abandoned.
        #expect(await eventually(within: TestTiming.loopbackBudget) { f.provider.isKillSwitchActive }, "\(f.provider.recentEvents)")
    }

    @Test func aFailedFetchIsReportedAndTheStoreKeepsItsValues() async throws {
        let f = try ProviderFixture(lifecycle: ManualLifecycle(foreground: false))
        defer { f.stop() }
        #expect(await f.provider.refreshInBackground(deadline: .seconds(5)).isSuccess)
        f.server.fault = .status(503, retryAfter: nil)
        f.server.document = Self.killed(true, version: "unseen")
        let outcome = await f.provider.refreshInBackground(deadline: .seconds(5))
        guard case .failed(let error) = outcome else {
            Issue.record("expected a failure, got \(outcome)")
            return
        }
        #expect(error.httpStatus == 503)
        #expect(!FallbackClient(fileURL: f.store.fileURL).isKillSwitchActive, "the stored values stay")
    }

    @Test func cancellationAnswersAtOnce() async throws {
        let f = try ProviderFixture(lifecycle: ManualLifecycle(foreground: false))
        defer { f.stop() }
        f.server.latency = .seconds(3)
        let task = Task { await f.provider.refreshInBackground(deadline: .seconds(10)) }
        try await Task.sleep(for: .milliseconds(50))
        let started = ContinuousClock.now
        task.cancel()
        let outcome = await task.value
        #expect(ContinuousClock.now - started < .milliseconds(2_500), "answered at the cancellation, not at the fetch's end")
        guard case .failed(let error) = outcome else {
            Issue.record("expected cancelled, got \(outcome)")
            return
        }
        #expect(error.kind == .cancelled)
    }
}
