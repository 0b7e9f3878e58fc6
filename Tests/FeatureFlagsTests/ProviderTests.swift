import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting
import FlagServer

extension FlagKey where Value == String {
    static let displayName = FlagKey("plan_displayName", default: "Limited mode")
}

/// The provider against a real loopback server, with a test clock and manual reachability:
/// no wall-clock sleeps.
@Suite("FeatureFlagProvider", .hangLimit())
struct ProviderTests {
    @Test func startOfflineServesTheFallbackAtOnce() async throws {
        let dir = TempDir()
        try seedFallback(dir, ["plan_themeColor": "#ABCDEF"])
        let f = try ProviderFixture(reachable: false, dir: dir)
        defer { f.stop() }
        // Before anything runs: the Last-Known-Good, synchronously.
        #expect(f.provider.value(.themeColor) == "#ABCDEF")
        let d = f.provider.details(.themeColor)
        #expect(d.source == .fallback && d.reason == .cached && d.snapshotVersion == "lkg")
        #expect(f.provider.status == .notReady)
        let run = f.run()
        #expect(await eventually { f.provider.status == .error })
        #expect(f.provider.labels.source == .fallback)
        #expect(f.server.requestCount == 0)
        #expect(f.provider.value(.themeColor) == "#ABCDEF")
        #expect(f.provider.recentEvents.contains(.error(.general, message: "no network path")))
        f.provider.shutdown()
        await run.value
    }

    @Test func hangingServerFallsBackAtTheBudgetThenGoesOnline() async throws {
        let dir = TempDir()
        try seedFallback(dir, ["plan_themeColor": "#ABCDEF"])
        let f = try ProviderFixture(dir: dir)
        defer { f.stop() }
        f.server.fault = .hangBeforeHeaders
        let run = f.run()
        let provider = f.provider
        let ready = Task { await provider.waitUntilReady(timeout: .seconds(2)) }
        #expect(await eventually { f.server.requestCount == 1 })
        // Sleeping now: the fetch's 2 s deadline and the splash screen's 2 s wait.
        await f.clock.sleepers(atLeast: 2)
        #expect(f.provider.status == .notReady)
        #expect(f.provider.value(.themeColor) == "#ABCDEF")
        f.clock.advance(by: .milliseconds(1_999))
        #expect(f.provider.status == .notReady)
        f.clock.advance(by: .milliseconds(1))
        // The splash screen's wait and the fetch's deadline end at the same instant: the wait
        // reports what it sees then; the fetch's failure lands at once.
        let atBudget = await ready.value
        #expect(atBudget == .error || atBudget == .notReady)
        #expect(await eventually { f.provider.status == .error })
        #expect(f.provider.lastError == .timeout(.seconds(2)))
        #expect(f.provider.labels.source == .fallback)
        #expect(f.provider.value(.themeColor) == "#ABCDEF")
        // The server answers again; the backoff timer brings the online values.
        f.server.fault = nil
        await f.clock.sleepers(atLeast: 1)
        f.clock.advanceToNextDeadline()
        #expect(await eventually { f.provider.status == .ready })
        #expect(f.provider.value(.themeColor) == "#3498DB")
        #expect(f.provider.details(.themeColor).source == .network)
        #expect(f.provider.labels.source == .network)
        f.provider.shutdown()
        await run.value
    }

    @Test func serverDownThenUp() async throws {
        let f = try ProviderFixture()
        defer { f.stop() }
        let run = f.run()
        #expect(await eventually { f.provider.status == .ready })
        let port = f.server.port
        // Hold the port, closed, so that no other test's server is given it meanwhile.
        var hold = f.server.stopHoldingPort()
        #expect(hold?.port == port)
        await f.clock.sleepers(atLeast: 1)
        f.clock.advanceToNextDeadline()  // the next poll meets a closed port
        #expect(await eventually { f.provider.status == .error })
        #expect(f.provider.labels.source == .fallback)
        #expect(f.provider.lastError?.suggestsOffline == true)
        #expect(f.provider.details(.themeColor).source == .fallback)
        #expect(f.provider.value(.themeColor) == "#3498DB")
        // The server comes back on the same port; the backoff retry finds it.
        let revived = try FlagServer(document: .seedExample, returningTo: try #require(hold))
        defer { revived.stop() }
        hold = nil
        _ = hold
        await f.clock.sleepers(atLeast: 1)
        f.clock.advanceToNextDeadline()
        #expect(await eventually { f.provider.status == .ready })
        #expect(f.provider.labels.source == .network)
        #expect(revived.requestCount == 1)
        #expect(f.provider.recentEvents.contains(.ready))
        f.provider.shutdown()
        await run.value
    }

    @Test func pathDownSendsNothingAndPathBackFetchesAtOnce() async throws {
        let f = try ProviderFixture()
        defer { f.stop() }
        let run = f.run()
        #expect(await eventually { f.provider.status == .ready })
        #expect(f.server.requestCount == 1)
        f.reachability.set(false)
        #expect(await eventually { f.provider.status == .error && f.provider.labels.source == .fallback })
        #expect(f.provider.details(.themeColor).source == .fallback)
        // Half an hour of polls and backoffs: nothing is sent while the path is down.
        for _ in 0..<12 {
            f.clock.advance(by: .seconds(150))
            await pause()
        }
        #expect(await f.provider.refresh() == .skipped("no network path"))
        #expect(f.server.requestCount == 1)
        // The path returns: a fetch at once, without advancing the clock.
        f.reachability.set(true)
        #expect(await eventually { f.server.requestCount == 2 })
        #expect(await eventually { f.provider.status == .ready && f.provider.labels.source == .network })
        f.provider.shutdown()
        await run.value
    }

    @Test func concurrentRefreshesShareOneRequest() async throws {
        let gate = GatedTransport()
        let f = try ProviderFixture(transport: gate)
        defer { f.stop(); gate.shutdown() }
        gate.hold(auraPersonal)
        let provider = f.provider
        let refreshes = (0..<5).map { _ in Task { await provider.refresh() } }
        // Every caller has joined the one fetch before the answer is let through.
        #expect(await eventually { provider.cell.inspect { $0.flight?.waiters.count } == 5 })
        #expect(await eventually { gate.waitingCount == 1 })
        gate.release(auraPersonal)
        var outcomes: [FetchOutcome] = []
        for refresh in refreshes { outcomes.append(await refresh.value) }
        #expect(Set(outcomes.map(\.name)) == ["updated"])
        #expect(outcomes.allSatisfy { $0 == outcomes[0] })
        #expect(f.server.requestCount == 1)
        #expect(f.endpoint.decodeCount == 1)
        // Once it has ended, the next refresh is a new request.
        _ = await provider.refresh()
        #expect(f.server.requestCount == 2)
    }

    @Test func identifyRaceEndsOnTheLastContext() async throws {
        let gate = GatedTransport()
        let f = try ProviderFixture(transport: gate)
        defer { f.stop(); gate.shutdown() }
        let a = auraPersonal, b = auraBusiness
        gate.hold(a)
        gate.hold(b)
        let provider = f.provider
        let first = Task { await provider.refresh() }  // A, generation 0
        #expect(await eventually { gate.waitingCount == 1 })
        provider.identify(b)
        #expect(provider.status == .reconciling)
        let second = Task { await provider.refresh() }  // B, generation 1
        #expect(await eventually { gate.waitingCount == 2 })
        provider.identify(a)
        let third = Task { await provider.refresh() }  // A again, generation 2
        #expect(await eventually { gate.waitingCount == 3 })
        // A's answers come first, B's last: B's must not win.
        gate.release(a)
        #expect(await third.value == .updated(Set(ServerDocument.seedExample.base.flags.keys)))
        #expect(await first.value == .discarded)
        gate.release(b)
        #expect(await second.value == .discarded)
        #expect(await eventually { f.server.requestCount == 3 })
        #expect(provider.value(.themeColor) == "#3498DB")
        #expect(provider.value(.displayName) == "AuraLink Personal")
        #expect(provider.context == a)
        #expect(provider.status == .ready)
        #expect(provider.snapshot.contextFingerprint == a.fingerprint)
    }

    @Test func venueChangeTriggersExactlyOneRefetch() async throws {
        let f = try ProviderFixture()
        defer { f.stop() }
        let run = f.run()
        #expect(await eventually { f.provider.status == .ready })
        #expect(f.provider.isEnabled(.newCheckout) == false)
        let moved = auraPersonal.with("venue", "venue-42")
        let events = f.provider.events()
        f.provider.identify(moved)
        #expect(await eventually { f.server.requestCount == 2 })
        #expect(await eventually { f.provider.status == .ready })
        #expect(f.provider.isEnabled(.newCheckout))
        #expect(f.server.requests.last?.contextFingerprint == moved.fingerprint)
        // The same context again changes nothing and sends nothing.
        f.provider.identify(moved)
        for _ in 0..<20 { await pause() }
        #expect(f.server.requestCount == 2)
        f.provider.shutdown()
        await run.value
        let seen = await first(64, of: events)
        let lifecycle = seen.compactMap(\.openFeatureName)
        #expect(lifecycle.contains("PROVIDER_RECONCILING"))
        #expect(lifecycle.contains("PROVIDER_CONTEXT_CHANGED"))
        #expect(lifecycle.firstIndex(of: "PROVIDER_RECONCILING")! < lifecycle.lastIndex(of: "PROVIDER_CONTEXT_CHANGED")!)
    }

    @Test func identifyServesTheNewContextsFallbackNeverThePrevious() async throws {
        let dir = TempDir()
        try seedFallback(dir, ["plan_themeColor": "#BBBBBB"], for: auraBusiness)
        try seedFallback(dir, ["plan_themeColor": "#AAAAAA"], for: auraPersonal)
        let f = try ProviderFixture(reachable: false, dir: dir)
        defer { f.stop() }
        #expect(f.provider.value(.themeColor) == "#AAAAAA")
        f.provider.identify(auraBusiness)
        #expect(f.provider.value(.themeColor) == "#BBBBBB")
        let stranger = EvaluationContext(targetingKey: "someone-else")
        f.provider.identify(stranger)
        #expect(f.provider.value(.themeColor) == "#000000")
        #expect(f.provider.details(.themeColor).source == .codeDefault)
    }

    @Test func killSwitchIsPersistedAndHoldsAcrossAnOfflineRelaunch() async throws {
        var killed = ServerDocument.seedExample
        killed.base.flags["kill_switch"] = FlagEntry(value: true)
        let server = try FlagServer(document: killed)
        defer { server.stop() }
        let dir = TempDir()
        do {
            let f = try ProviderFixture(server: server, dir: dir)
            #expect(await f.provider.refresh() != .discarded)
            #expect(f.provider.isKillSwitchActive)
            #expect(f.provider.value(.themeColor) == "#000000")
            #expect(f.provider.details(.themeColor).reason == .disabled)
            #expect(f.provider.details(.themeColor).source == .killSwitch)
            #expect(f.provider.recentEvents.contains(.killSwitch(active: true)))
            f.provider.shutdown()
        }
        // Relaunch with no network: still killed, before any fetch.
        let offline = try ProviderFixture(reachable: false, server: server, dir: dir)
        #expect(offline.provider.isKillSwitchActive)
        #expect(offline.provider.value(.themeColor) == "#000000")
        #expect(offline.provider.details(.themeColor).source == .killSwitch)
        #expect(offline.provider.bool("kill_switch", default: false))
        // The operator turns it off; the network returns.
        server.document = .seedExample
        offline.reachability.set(true)
        #expect(await offline.provider.refresh() != .discarded)
        #expect(!offline.provider.isKillSwitchActive)
        #expect(offline.provider.value(.themeColor) == "#3498DB")
        #expect(offline.provider.recentEvents.contains(.killSwitch(active: false)))
        offline.provider.shutdown()
    }

    /// The emergency kill path: a kill holds on the device for every context and across
    /// relaunches, until a successful fetch for the context being served says it is off.
    @Test func aKillHoldsForEveryContextAndAcrossRelaunchesUntilTheServedContextReleasesIt() async throws {
        var killed = ServerDocument.seedExample
        killed.base.flags["kill_switch"] = FlagEntry(value: true)
        let server = try FlagServer(document: killed)
        defer { server.stop() }
        let dir = TempDir()
        let a = auraPersonal, b = auraBusiness
        let c = EvaluationContext(targetingKey: "user-9", venue: "venue-7", partner: "zenithsat", planTier: "personal")
        try seedFallback(dir, auraLinkBusiness, for: b)  // B's own stored values do not kill
        do {
            // Kill for A.
            let f = try ProviderFixture(context: a, server: server, dir: dir)
            #expect(await f.provider.refresh() != .discarded)
            #expect(f.provider.isKillSwitchActive)
            // Offline, identify B: still killed, although B's stored snapshot says nothing of it.
            f.reachability.set(false)
            f.provider.identify(b)
            #expect(f.provider.snapshot.flags["plan_themeColor"]?.value == "#2C3E50", "B's Last-Known-Good is served")
            #expect(f.provider.isKillSwitchActive)
            #expect(f.provider.value(.themeColor) == "#000000")
            #expect(f.provider.details(.themeColor).source == .killSwitch)
            #expect(f.provider.bool("kill_switch", default: false))
            // An app extension reading the same file, for any context, is killed too.
            #expect(FallbackClient(fileURL: f.fallbackURL, context: c).isKillSwitchActive)
            #expect(await eventually { LastKnownGoodStore(fileURL: f.fallbackURL).killHold != nil })
            f.provider.shutdown()
        }
        // Relaunch offline as C, which has nothing stored: still killed.
        let relaunched = try ProviderFixture(context: c, reachable: false, server: server, dir: dir)
        #expect(relaunched.provider.isKillSwitchActive)
        #expect(relaunched.provider.value(.themeColor) == "#000000")
        #expect(relaunched.provider.recentEvents.contains(.killSwitch(active: true)))
        // A fetch for C without the kill: released.
        server.document = .seedExample
        relaunched.reachability.set(true)
        #expect(await relaunched.provider.refresh() != .discarded)
        #expect(!relaunched.provider.isKillSwitchActive)
        #expect(relaunched.provider.value(.themeColor) == "#2ECC71")
        #expect(relaunched.provider.recentEvents.contains(.killSwitch(active: false)))
        #expect(await eventually { LastKnownGoodStore(fileURL: relaunched.fallbackURL).killHold == nil })
        relaunched.provider.shutdown()
        // Released for the device: B offline is served its own values; A's own stored answer
        // still kills A until A's service says otherwise.
        let offlineB = try ProviderFixture(context: b, reachable: false, server: server, dir: dir)
        #expect(!offlineB.provider.isKillSwitchActive)
        #expect(offlineB.provider.value(.themeColor) == "#2C3E50")
        offlineB.provider.shutdown()
        let offlineA = try ProviderFixture(context: a, reachable: false, server: server, dir: dir)
        #expect(offlineA.provider.isKillSwitchActive)
        offlineA.provider.shutdown()
    }

    @Test func pollCadenceFollowsTheIntervalWithJitter() async throws {
        let f = try ProviderFixture()
        defer { f.stop() }
        let run = f.run()
        #expect(await eventually { f.server.requestCount == 1 && f.provider.status == .ready })
        var intervals: [Double] = []
        for n in 2...6 {
            await f.clock.sleepers(atLeast: 1)
            let step = try #require(f.clock.advanceToNextDeadline())
            intervals.append(step.seconds)
            #expect(await eventually { f.server.requestCount == n })
            // Let the fetch finish, so the next sleeper is the poll timer, not its deadline.
            #expect(await eventually { !f.provider.isFetching })
        }
        #expect(intervals.allSatisfy { $0 >= 270 && $0 <= 330 }, "\(intervals)")
        #expect(Set(intervals).count > 1, "jitter should vary the intervals")
        #expect(f.server.requests.dropFirst().allSatisfy { $0.status == 304 })
        f.provider.shutdown()
        await run.value
    }

    @Test func pollIntervalHasAFloor() {
        #expect(FeatureFlagProvider.Configuration(pollInterval: .seconds(1)).pollInterval == .seconds(30))
        var configuration = FeatureFlagProvider.Configuration()
        configuration.pollInterval = .seconds(5)
        #expect(configuration.pollInterval == .seconds(30))
        #expect(FeatureFlagProvider.Configuration().pollInterval == .seconds(300))
    }

    @Test func notModifiedCostsNoDecodeAndNoDiskWrite() async throws {
        let f = try ProviderFixture()
        defer { f.stop() }
        #expect(await f.provider.refresh() == .updated(Set(ServerDocument.seedExample.base.flags.keys)))
        let before = try stamp(f.fallbackURL.path)
        #expect(f.endpoint.decodeCount == 1)
        for _ in 0..<3 { #expect(await f.provider.refresh() == .unchanged) }
        #expect(f.server.requests.map(\.status) == [200, 304, 304, 304])
        #expect(f.endpoint.decodeCount == 1)
        #expect(try stamp(f.fallbackURL.path) == before, "a 304 must not rewrite the fallback file")
        #expect(f.provider.details(.themeColor).source == .network)
    }

    @Test func relaunchSendsTheStoredETag() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let dir = TempDir()
        let first = try ProviderFixture(server: server, dir: dir)
        _ = await first.provider.refresh()
        first.provider.shutdown()
        let second = try ProviderFixture(server: server, dir: dir)
        defer { second.provider.shutdown() }
        #expect(second.provider.details(.themeColor).source == .fallback)
        #expect(await second.provider.refresh() == .unchanged)
        #expect(server.requests.map(\.status) == [200, 304])
        #expect(second.endpoint.decodeCount == 0)
        #expect(second.provider.status == .ready)
        #expect(second.provider.details(.themeColor).source == .network)
    }

    @Test func failuresBackOffExponentiallyWithJitter() async throws {
        let f = try ProviderFixture(configuration: .init(pollInterval: .seconds(30)), seed: 99)
        defer { f.stop() }
        f.server.fault = .status(500, retryAfter: nil)
        let run = f.run()
        var expectedRandom = SplitMix(seed: 99)
        let backoff = f.provider.configuration.backoff
        var observed: [Duration] = []
        for failures in 1...7 {
            #expect(await eventually { f.provider.consecutiveFailures == failures })
            await f.clock.sleepers(atLeast: 1)
            let step = try #require(f.clock.advanceToNextDeadline())
            observed.append(step)
            let expected = backoff.delay(afterFailures: failures, using: &expectedRandom)
            #expect(step == expected, "failure \(failures)")
            #expect(step <= backoff.ceiling(afterFailures: failures))
        }
        #expect(backoff.ceiling(afterFailures: 6) == .seconds(30), "capped at the poll interval")
        #expect(f.provider.status == .error)
        f.provider.shutdown()
        await run.value
        _ = observed
    }

    @Test func retryAfterIsHonoured() async throws {
        let f = try ProviderFixture()
        defer { f.stop() }
        f.server.fault = .status(429, retryAfter: "120")
        let run = f.run()
        #expect(await eventually { f.provider.consecutiveFailures == 1 })
        await f.clock.sleepers(atLeast: 1)
        #expect(f.clock.sleeperDeadlines.first == TestClock.Instant(offset: .seconds(120)))
        f.server.fault = nil
        f.clock.advance(by: .seconds(119))
        #expect(await f.provider.refresh() == .skipped("waiting for Retry-After"))
        #expect(f.server.requestCount == 1)
        f.clock.advance(by: .seconds(1))
        #expect(await eventually { f.server.requestCount == 2 })
        #expect(await eventually { f.provider.status == .ready })
        f.provider.shutdown()
        await run.value
    }

    @Test func unauthorizedIsFatalAndPollingStops() async throws {
        let f = try ProviderFixture()
        defer { f.stop() }
        f.server.fault = .status(401, retryAfter: nil)
        let run = f.run()
        await run.value  // run() returns by itself
        #expect(f.provider.status == .fatal)
        #expect(f.provider.recentEvents.contains(.error(.providerFatal, message: "HTTP 401: injected status 401")))
        f.clock.advance(by: .seconds(3_600))
        #expect(await f.provider.refresh() == .skipped("stopped after a fatal error"))
        #expect(f.server.requestCount == 1)
        #expect(f.clock.sleeperCount == 0)
    }

    @Test func staleWhenOlderThanTheTTLAndFetchFails() async throws {
        var short = ServerDocument.seedExample
        short.base.ttl = 60
        let f = try ProviderFixture(document: short)
        defer { f.stop() }
        _ = await f.provider.refresh()
        #expect(f.provider.status == .ready)
        f.server.fault = .status(500, retryAfter: nil)
        f.clock.advance(by: .seconds(30))
        _ = await f.provider.refresh()
        #expect(f.provider.status == .error)
        #expect(f.provider.details(.themeColor).reason == .cached)
        f.clock.advance(by: .seconds(60))
        _ = await f.provider.refresh()
        #expect(f.provider.status == .stale)
        #expect(f.provider.details(.themeColor).reason == .stale)
        #expect(f.provider.value(.themeColor) == "#3498DB")
        #expect(f.provider.recentEvents.contains { $0.kind == .stale })
        f.server.fault = nil
        _ = await f.provider.refresh()
        #expect(f.provider.status == .ready)
        #expect(f.provider.details(.themeColor).reason == .targetingMatch)
    }

    @Test func lifecycleEventsInOrder() async throws {
        let f = try ProviderFixture()
        defer { f.stop() }
        let events = f.provider.events()
        _ = await f.provider.refresh()
        f.provider.shutdown()
        let seen = await first(100, of: events)
        guard let activated = seen.firstIndex(where: { $0.kind == .activated }),
            let changed = seen.firstIndex(where: { $0.kind == .configurationChanged }),
            let ready = seen.firstIndex(of: .ready),
            let completed = seen.firstIndex(where: { $0.kind == .fetchCompleted })
        else {
            Issue.record("missing events: \(seen)")
            return
        }
        #expect(changed < activated && activated < ready && ready < completed)
        #expect(seen[completed].outcome == .updated(seen[changed].keys ?? []))
        #expect(f.provider.status == .ready)
    }

    @Test func shutdownIsIdempotentAndEndsEverything() async throws {
        let f = try ProviderFixture()
        defer { f.server.stop() }
        let run = f.run()
        #expect(await eventually { f.provider.status == .ready })
        await f.clock.sleepers(atLeast: 1)
        let changes = f.provider.changes()
        f.provider.shutdown()
        f.provider.shutdown()
        await run.value
        #expect(f.clock.sleeperCount == 0)
        #expect(await first(1, of: changes).isEmpty)
        #expect(await f.provider.refresh() == .skipped("shut down"))
        #expect(!f.provider.isFetching)
        // Reads keep working with the last values.
        #expect(f.provider.value(.themeColor) == "#3498DB")
    }

    @Test func aSecondRunReturnsAtOnce() async throws {
        let f = try ProviderFixture(reachable: false)
        defer { f.stop() }
        let run = f.run()
        #expect(await eventually { f.provider.status == .error })
        await f.provider.run()
        f.provider.shutdown()
        await run.value
    }

    /// A wait that ended leaves nothing behind that could end a later wait early (its timer is
    /// cancelled and does nothing; a live timer keeps its wait's name from being reused).
    @Test func anEndedWaitNeverReleasesALaterOne() async throws {
        let gate = GatedTransport()
        let f = try ProviderFixture(transport: gate)
        defer { f.stop(); gate.shutdown() }
        let provider = f.provider
        var contexts = [auraBusiness, auraPersonal]
        _ = await provider.refresh()
        for round in 0..<30 {
            // A wait that ends at once (settled), leaving its timer cancelled behind it.
            #expect(await provider.waitUntilReady(timeout: .seconds(5)) == .ready)
            // Another context, its answer held at the gate: the next wait must really wait.
            let next = contexts[round % 2]
            gate.hold(next)
            provider.identify(next)
            let fetch = Task { await provider.refresh() }
            let waiting = Task { await provider.waitUntilReady(timeout: .seconds(5)) }
            #expect(await eventually { gate.waitingCount == 1 })
            for _ in 0..<5 { await pause() }
            #expect(provider.status == .reconciling)
            gate.release(next)
            _ = await fetch.value
            // Bounded: were the wait never released, the test clock would end it at 5 s.
            f.clock.advance(by: .seconds(5))
            #expect(await waiting.value == .ready, "round \(round)")
        }
        contexts.removeAll()
    }

    /// A task cancelled before it waits — its cancellation handler runs before the wait is
    /// registered — returns at once, not at the timeout (the test clock never reaches it).
    @Test func aWaitInACancelledTaskReturnsAtOnce() async throws {
        let gate = GatedTransport()
        let f = try ProviderFixture(transport: gate)
        defer { f.stop(); gate.shutdown() }
        let provider = f.provider
        let waiting = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await provider.waitUntilReady(timeout: .seconds(3_600))
        }
        let returned = Locked(false)
        Task {
            _ = await waiting.value
            returned.withLock { $0 = true }
        }
        #expect(await eventually(within: TestTiming.loopbackBudget) { returned.withLock { $0 } }, "the wait ignored its task's cancellation")
        if returned.withLock({ $0 }) { #expect(await waiting.value == .notReady) }
        // A wait cancelled while it waits returns too.
        let later = Task { await provider.waitUntilReady(timeout: .seconds(3_600)) }
        await f.clock.sleepers(atLeast: 1)
        later.cancel()
        #expect(await later.value == .notReady)
    }

    @Test func waitUntilReadyReturnsAsSoonAsTheFetchEnds() async throws {
        let f = try ProviderFixture()
        defer { f.stop() }
        let run = f.run()
        #expect(await f.provider.waitUntilReady(timeout: .seconds(2)) == .ready)
        f.provider.shutdown()
        await run.value
    }
}

/// Modification time, size and inode of a file: an atomic replace changes them.
private func stamp(_ path: String) throws -> FileStamp {
    guard let stamp = FileStamp(path: path) else { throw CocoaError(.fileNoSuchFile) }
    return stamp
}

extension ProviderTests {
    /// An offline provider over a fallback file whose values were fetched `age` seconds before
    /// the fixture's start, with `ttl`.
    func offlineFixture(storedAgo age: TimeInterval, ttl: TimeInterval) throws -> ProviderFixture {
        let dir = TempDir()
        try LastKnownGoodStore(fileURL: dir.url("flags.lkg")).save(
            FlagSnapshot(values: ["plan_themeColor": "#ABCDEF"], version: "lkg", fetchedAt: Date(timeIntervalSince1970: 1_750_000_000 - age), ttl: ttl),
            etag: nil, for: auraPersonal)
        return try ProviderFixture(reachable: false, dir: dir)
    }

    @Test func storedValuesAlreadyPastTheirTTLReadStaleAtLaunch() throws {
        let f = try offlineFixture(storedAgo: 7_200, ttl: 3_600)
        defer { f.stop() }
        let details = f.provider.details(.themeColor)
        #expect(details.value == "#ABCDEF" && details.source == .fallback && details.reason == .stale)
        #expect(f.provider.status == .notReady, "the launch status is NOT_READY until the first fetch ends, expired or not")
    }

    @Test func offlineFallbackValuesTurnStaleWhenTheirTTLRunsOut() async throws {
        // Stored an hour before the provider starts, with a two-hour TTL; no network path.
        let f = try offlineFixture(storedAgo: 3_600, ttl: 7_200)
        defer { f.stop() }
        let run = f.run()
        #expect(await eventually { f.provider.status == .error && f.provider.isWaitingForWakeUpOnly })
        #expect(f.provider.details(.themeColor).reason == .cached)
        // The run loop sleeps until the values expire, an hour (and a millisecond) from now.
        let expiry = TestClock.Instant(offset: .seconds(3_600) + .milliseconds(1))
        #expect(await eventually { f.clock.sleeperDeadlines.contains(expiry) }, "\(f.clock.sleeperDeadlines)")
        f.clock.advance(by: .seconds(3_599))
        #expect(f.provider.status == .error)
        f.clock.advance(by: .seconds(2))
        #expect(await eventually { f.provider.status == .stale })
        #expect(f.provider.details(.themeColor).reason == .stale && f.provider.value(.themeColor) == "#ABCDEF")
        #expect(f.provider.recentEvents.contains { $0.kind == .stale })
        #expect(f.server.requestCount == 0, "nothing was sent: there is no path")
        f.provider.shutdown()
        await run.value
    }
}
