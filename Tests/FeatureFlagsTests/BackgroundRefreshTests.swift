@testable import FeatureFlags
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
        // Launched in the background: nothing is fetched on its own (the loop waits for the
        // foreground, with no poll timer).
        #expect(await eventually { f.provider.isWaitingForWakeUpOnly && !f.provider.isFetching })
        #expect(f.server.requestCount == 0)
        let outcome = await f.provider.refreshInBackground(deadline: TestTiming.loopbackBudget)
        #expect(outcome.isSuccess, "\(outcome)")
        #expect(f.provider.isKillSwitchActive)
        // Stored before it returned: another reader of the file (an extension) sees the kill.
        let reader = FallbackClient(fileURL: f.store.fileURL)
        #expect(reader.isKillSwitchActive)
        // No stream in the background, although the answer advertised one: the transition
        // that served the answer decided which streams stay open (none).
        let streams = f.provider.cell.inspect { $0.streams }
        #expect(streams.advertised?.isEmpty == false && streams.open.isEmpty)
        #expect(f.server.streamCount == 0 && f.provider.openStreamCount == 0)
        #expect(f.server.requests.allSatisfy { $0.route != "GET /events" })
        // The foreground opens it, after an unconditional fetch.
        let before = f.server.requestCount
        lifecycle.set(foreground: true)
        #expect(await eventually {
            f.server.streamCount == 1 && f.server.requests.dropFirst(before).contains { $0.route != "GET /events" }
        })
        let resumed = try #require(f.server.requests.dropFirst(before).first { $0.route != "GET /events" })
        #expect(resumed.ifNoneMatch == nil, "the first fetch in the foreground is unconditional")
    }

    @Test func itAnswersAtItsDeadlineAndTheFetchStillLands() async throws {
        // The request is held at a gate: only the deadline can answer.
        let gate = GatedTransport()
        gate.hold(auraPersonal)
        let f = try ProviderFixture(transport: gate, lifecycle: ManualLifecycle(foreground: false))
        defer { f.stop() }
        f.server.document = Self.killed(true, version: "slow")
        // The deadline runs on the provider's clock: advanced by hand, no wall time waited.
        let provider = f.provider
        let call = Task { await provider.refreshInBackground(deadline: .milliseconds(100)) }
        await f.clock.sleepers(atLeast: 1)
        f.clock.advance(by: .milliseconds(100))
        let outcome = await call.value
        guard case .failed(let error) = outcome else {
            Issue.record("expected a timeout, got \(outcome)")
            return
        }
        #expect(error.kind == .timeout && !outcome.isSuccess)
        #expect(!f.provider.isKillSwitchActive)
        // The fetch was not abandoned: released, it lands.
        gate.release(auraPersonal)
        #expect(await eventually { f.provider.isKillSwitchActive }, "\(f.provider.recentEvents)")
    }

    @Test func aFailedFetchIsReportedAndTheStoreKeepsItsValues() async throws {
        let f = try ProviderFixture(lifecycle: ManualLifecycle(foreground: false))
        defer { f.stop() }
        #expect(await f.provider.refreshInBackground(deadline: TestTiming.loopbackBudget).isSuccess)
        f.server.fault = .status(503, retryAfter: nil)
        f.server.document = Self.killed(true, version: "unseen")
        let outcome = await f.provider.refreshInBackground(deadline: TestTiming.loopbackBudget)
        guard case .failed(let error) = outcome else {
            Issue.record("expected a failure, got \(outcome)")
            return
        }
        #expect(error.httpStatus == 503)
        #expect(!FallbackClient(fileURL: f.store.fileURL).isKillSwitchActive, "the stored values stay")
    }

    @Test func cancellationAnswersAtOnce() async throws {
        let held = try Held(lifecycle: ManualLifecycle(foreground: false))
        defer { held.stop() }
        let f = held.fixture
        let task = Task { await f.provider.refreshInBackground(deadline: .seconds(3_600)) }
        #expect(await eventually { held.gate.waitingCount == 1 })
        let deadline = f.clock.now.advanced(by: .seconds(3_600))
        #expect(await eventually { f.clock.sleeperDeadlines.contains(deadline) }, "the deadline's timer waits")
        task.cancel()
        let outcome = await task.value
        #expect(outcome == .failed(.cancelled), "\(outcome)")
        #expect(await eventually { !f.clock.sleeperDeadlines.contains(deadline) }, "answered: the timer ended with it")
    }

    @Test func aCancelledRefreshAnswersAtOnceAndTheFetchStillLands() async throws {
        // A screen's pull-to-refresh that went away: `refresh()` has no deadline of its own.
        let held = try Held()
        defer { held.stop() }
        let f = held.fixture
        f.server.document = Self.killed(true, version: "late")
        let provider = f.provider
        let task = Task { await provider.refresh() }
        #expect(await eventually { held.gate.waitingCount == 1 })
        task.cancel()
        let outcome = await task.value
        #expect(outcome == .failed(.cancelled), "\(outcome)")
        // The fetch was not abandoned: released, it lands.
        held.gate.release(auraPersonal)
        #expect(await eventually { f.provider.isKillSwitchActive }, "\(f.provider.recentEvents)")
    }

    @Test func aRefreshInATaskAlreadyCancelledAnswersAtOnce() async throws {
        let held = try Held()
        defer { held.stop() }
        let provider = held.fixture.provider
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await provider.refresh()
        }
        let outcome = await task.value
        #expect(outcome == .failed(.cancelled), "\(outcome)")
    }

    /// A provider whose fetch for `auraPersonal` waits at a gate until the test releases it;
    /// `stop()` releases it and stops the fixture.
    struct Held {
        let gate = GatedTransport()
        let fixture: ProviderFixture

        init(lifecycle: any AppLifecycle = AlwaysForeground()) throws {
            gate.hold(auraPersonal)
            fixture = try ProviderFixture(transport: gate, lifecycle: lifecycle)
        }

        func stop() {
            gate.release(auraPersonal)
            fixture.stop()
        }
    }
}
