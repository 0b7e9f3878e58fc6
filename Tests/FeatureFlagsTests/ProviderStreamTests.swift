import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting
import FlagServer

/// The provider with the change streams its flag service advertises: kills arrive without a
/// poll, every fault of the stream leaves polling as the safety net, and nothing streams or
/// polls while the path is down or the app is in the background. Real loopback HTTP; the
/// provider's schedule runs on a test clock, so any fetch seen here that the clock did not
/// cause came from a stream.
@Suite("Provider change streams")
struct ProviderStreamTests {
    static func fixture(
        server: FlagServer? = nil, lifecycle: any AppLifecycle = AlwaysForeground(), heartbeat: Duration = .seconds(86_400),
        grace: Duration = .seconds(10)
    ) throws -> ProviderFixture {
        // The heartbeat deadline runs on the test clock: a day, unless a test is about it, so
        // that advancing the clock to a poll does not also declare the stream half-open.
        var configuration = FeatureFlagProvider.Configuration(heartbeatDeadline: heartbeat, backgroundStreamGrace: grace)
        configuration.streamBackoff = Backoff(initial: .milliseconds(20), maximum: .milliseconds(100))
        return try ProviderFixture(server: server, configuration: configuration, streams: true, lifecycle: lifecycle)
    }

    /// Whether (within the usual bound) a stream's heartbeat watchdog sleeps on `clock`, due
    /// exactly `deadline` from now (it started when the stream connected; the clock has not
    /// moved since). Other sleepers are due at other times (the poll timer minutes later).
    static func watchdogWaits(_ clock: TestClock, deadline: Duration) async -> Bool {
        await eventually { clock.sleeperDeadlines.contains { clock.now.duration(to: $0) == deadline } }
    }

    /// Moves `clock` on by `deadline` until `condition` holds (at most five times). One
    /// deadline is enough when the stream fell silent before the clock moved; a heartbeat the
    /// server sent just before its fault, still in the client's buffers, lands after the move
    /// and re-arms the watchdog from the moved clock — a second deadline then closes it, as it
    /// would on a device.
    static func advance(_ clock: TestClock, by deadline: Duration, until condition: () -> Bool) async -> Bool {
        for _ in 0..<5 {
            clock.advance(by: deadline)
            // Either the condition, or a watchdog armed again from the moved clock (due a whole
            // deadline from now): then the next move is due at once, not after a wait.
            let rearmed = { clock.sleeperDeadlines.contains { clock.now.duration(to: $0) == deadline } }
            _ = await eventually(within: TestTiming.scaled(.seconds(2))) { condition() || rearmed() }
            if condition() { return true }
        }
        return false
    }

    static func killed(_ on: Bool, version: String) -> ServerDocument {
        var document = ServerDocument.seedExample
        document.base.flags["kill_switch"] = FlagEntry(value: .bool(on))
        document.base.version = version
        return document
    }

    /// Runs the provider until its stream is open and the fetch its opening asked for is done.
    static func start(_ f: ProviderFixture) async -> Task<Void, Never> {
        let loop = f.run()
        #expect(await f.provider.waitUntilReady(timeout: .seconds(5)) == .ready)
        #expect(await eventually { f.server.streamCount == 1 && f.provider.openStreamCount == 1 })
        #expect(
            await eventually { f.provider.recentEvents.contains { $0.kind == .streamOpened } && !f.provider.isFetching },
            "fetching: \(f.provider.isFetching), events: \(f.provider.recentEvents)")
        return loop
    }

    /// Whether the provider has heard the stream's notice of the server's current revision
    /// and every fetch it led to has ended. Nothing more happens after that unless something
    /// changes: a notice met by a fetch in flight queues the next in the transition that ends
    /// it, and the test clock stands still.
    static func settled(_ f: ProviderFixture) async -> Bool {
        let latest = "\"r\(f.server.revision)\""
        return await eventually {
            f.provider.recentEvents.contains { $0.kind == .changeNotified && $0.details.etag == latest } && !f.provider.isFetching
        }
    }

    /// Whether the run loop has handled what woke it (a timer the clock passed, a change of
    /// path or foreground) and sleeps with no poll scheduled: a fetch any of it led to has
    /// reached the server by then, and none can follow without a wake-up.
    static func loopIdle(_ f: ProviderFixture) async -> Bool {
        await eventually { f.provider.isWaitingForWakeUpOnly && !f.provider.isFetching }
    }

    /// Whether the provider has handled `count` trips between foreground and background since
    /// `before` (its count then), and no fetch is in flight: a fetch any of them asked for has
    /// reached the server by then.
    static func handledLifecycle(_ count: Int, since before: Int, _ f: ProviderFixture) async -> Bool {
        await eventually { f.provider.cell.inspect { $0.streams.inactivityToken } == before + count && !f.provider.isFetching }
    }

    @Test func aRefreshWithoutRunIsOneRequestAndOpensNoStream() async throws {
        // What the README's "one fetch" promises: no stream (its opening would ask for a
        // second fetch) unless run() runs.
        let f = try Self.fixture()
        defer { f.stop() }
        _ = await f.provider.refresh()
        #expect(f.server.requests.map(\.route) == ["POST /flags"])
        #expect(f.provider.openStreamCount == 0)
        // run() opens the stream the answer advertised.
        let loop = f.run()
        defer { loop.cancel() }
        #expect(await eventually { f.server.streamCount == 1 && f.provider.openStreamCount == 1 })
    }

    @Test func aKillArrivesByTheStreamWithItsMetadataAndNoPoll() async throws {
        let f = try Self.fixture()
        defer { f.stop() }
        let loop = await Self.start(f)
        defer { loop.cancel() }
        let before = f.server.requestCount
        f.server.document = Self.killed(true, version: "k1")
        #expect(await eventually { f.provider.isKillSwitchActive })
        #expect(f.provider.details(FlagKey("plan_themeColor", default: "#000000")).source == .killSwitch)
        let refetch = try #require(f.server.requests.dropFirst(before).first { $0.route != "GET /events" })
        #expect(refetch.flagConfigEtag?.hasPrefix("\"r") == true, "the event's etag goes with the refetch")
        #expect(refetch.flagConfigLastModified.flatMap(Int.init) != nil)
        #expect(f.provider.recentEvents.contains { $0.kind == .changeNotified })
        // Off again, the same way.
        f.server.document = Self.killed(false, version: "k2")
        #expect(await eventually { !f.provider.isKillSwitchActive })
    }

    @Test func theFirstFetchIsUnconditionalAndOnlyStreamRefetchesCarryMetadata() async throws {
        let dir = TempDir()
        // A stored snapshot with its tag but no streams (stored by an earlier version): without
        // streams to open the first fetch would be a 304.
        let seeded = try ProviderFixture(dir: dir)
        guard case .updated = await seeded.provider.refresh() else { return seeded.stop() }
        seeded.stop()
        let stored = try #require(LastKnownGoodStore(fileURL: dir.url("flags.lkg")).lastKnownGood(for: auraPersonal))
        try LastKnownGoodStore(fileURL: dir.url("flags.lkg")).save(stored.snapshot, etag: stored.etag, for: auraPersonal)

        var configuration = FeatureFlagProvider.Configuration(heartbeatDeadline: .seconds(86_400))
        configuration.streamBackoff = Backoff(initial: .milliseconds(20), maximum: .milliseconds(100))
        let f = try ProviderFixture(dir: dir, configuration: configuration, streams: true)
        defer { f.stop() }
        let loop = await Self.start(f)
        defer { loop.cancel() }
        let flags = f.server.requests.filter { $0.route != "GET /events" }
        #expect(flags.first?.ifNoneMatch == nil, "a launch without stored streams asks unconditionally: only a full answer advertises them")
        #expect(flags.first?.status == 200)
        // The fetch the stream's opening asked for is conditional and carries no metadata.
        #expect(flags.count >= 2)
        #expect(flags.last?.ifNoneMatch != nil && flags.last?.flagConfigEtag == nil)
        // A poll carries none either.
        let count = f.server.requestCount
        await f.clock.sleepers(atLeast: 1)
        f.clock.advance(by: .seconds(400))
        #expect(await eventually { f.server.requestCount > count && !f.provider.isFetching })
        let poll = f.server.requests.last { $0.route != "GET /events" }
        #expect(poll?.flagConfigEtag == nil && poll?.ifNoneMatch != nil)
    }

    @Test func changesDuringAFetchCoalesceIntoOneMoreFetch() async throws {
        let f = try Self.fixture()
        defer { f.stop() }
        let loop = await Self.start(f)
        defer { loop.cancel() }
        // Hold the answers for a while so that several changes meet a fetch in flight.
        f.server.latency = .milliseconds(300)
        let before = f.server.requests.filter { $0.route != "GET /events" }.count
        for n in 1...5 { f.server.document = Self.killed(n % 2 == 1, version: "c\(n)") }
        #expect(await Self.settled(f), "\(f.provider.recentEvents)")
        #expect(f.provider.isKillSwitchActive)
        let fetches = f.server.requests.filter { $0.route != "GET /events" }.count - before
        #expect(fetches <= 2, "five events, at most one fetch in flight plus one queued: \(fetches)")
        #expect(f.provider.snapshot.version == "c5")
    }

    @Test func aDroppedStreamReconnectsAndFetchesAgain() async throws {
        let f = try Self.fixture()
        defer { f.stop() }
        f.server.streamFault = .dropAfter(events: 1)
        let loop = await Self.start(f)
        defer { loop.cancel() }
        f.server.document = Self.killed(true, version: "d1")
        #expect(await eventually { f.provider.isKillSwitchActive })
        #expect(await eventually { f.provider.recentEvents.contains { $0.kind == .streamClosed } })
        // The reconnection waits out its backoff on the provider's clock.
        #expect(await f.clock.reconnect { f.provider.recentEvents.filter { $0.kind == .streamOpened }.count >= 2 })
        f.server.document = Self.killed(false, version: "d2")
        #expect(await eventually { !f.provider.isKillSwitchActive })
    }

    @Test func aHalfOpenStreamIsClosedByTheHeartbeatDeadlineAndReopened() async throws {
        let server = try FlagServer(document: .seedExample, configuration: .init(streamHeartbeat: .milliseconds(50)))
        let f = try Self.fixture(server: server, heartbeat: .seconds(45))
        defer { f.stop() }
        let loop = await Self.start(f)
        defer { loop.cancel() }
        server.streamFault = .halfOpen
        // The heartbeat deadline runs on the provider's clock: once the watchdog waits on it,
        // 45 s pass at once.
        #expect(await Self.watchdogWaits(f.clock, deadline: .seconds(45)))
        let closed = await Self.advance(f.clock, by: .seconds(45)) {
            f.provider.recentEvents.contains { $0.kind == .streamClosed && ($0.message ?? "").contains("half-open") }
        }
        #expect(closed, "\(f.provider.recentEvents)")
        server.streamFault = nil
        // Reconnected: a flip arrives by stream again. Counted in the server's request log, not in
        // the provider's last 32 events: on a loaded machine the first `stream_opened` can leave
        // that window before the second arrives.
        #expect(await f.clock.reconnect { server.requests.filter { $0.route == "GET /events" }.count >= 2 })
        server.document = Self.killed(true, version: "h1")
        #expect(await eventually { f.provider.isKillSwitchActive })
    }

    @Test func aKillDuringAHalfOpenStreamArrivesAtTheHeartbeatDeadlineWithoutWaitingForTheReconnection() async throws {
        let server = try FlagServer(document: .seedExample, configuration: .init(streamHeartbeat: .milliseconds(50)))
        var configuration = FeatureFlagProvider.Configuration(heartbeatDeadline: .seconds(45))
        // A reconnection far off: only the close's own fetch can bring the kill in time.
        configuration.streamBackoff = Backoff(initial: .seconds(30), maximum: .seconds(30))
        let f = try ProviderFixture(server: server, configuration: configuration, streams: true)
        defer { f.stop() }
        let loop = await Self.start(f)
        defer { loop.cancel() }
        server.streamFault = .halfOpen
        #expect(await Self.watchdogWaits(f.clock, deadline: .seconds(45)))
        server.document = Self.killed(true, version: "deaf-1")
        // Nothing comes by the deaf stream, however long one waits short of the deadline.
        #expect(!(await eventually(within: .milliseconds(300)) { f.provider.isKillSwitchActive }), "the kill came by a deaf stream")
        #expect(await Self.advance(f.clock, by: .seconds(45)) { f.provider.isKillSwitchActive }, "\(f.provider.recentEvents)")
        #expect(f.provider.recentEvents.contains { $0.kind == .streamClosed && ($0.message ?? "").contains("half-open") })
        #expect(f.server.streamCount <= 1, "the kill came by the close's fetch, not a reconnection")
    }

    @Test func aServerRestartIsFollowedByAReconnectAndAFetch() async throws {
        let f = try Self.fixture()
        defer { f.stop() }
        let loop = await Self.start(f)
        defer { loop.cancel() }
        let port = f.server.port
        var hold = f.server.stopHoldingPort()
        #expect(hold?.port == port)
        #expect(await eventually { f.provider.recentEvents.contains { $0.kind == .streamClosed } })
        let restarted = try FlagServer(document: Self.killed(true, version: "after-restart"), returningTo: try #require(hold))
        defer { restarted.stop() }
        hold = nil
        _ = hold
        // Nobody polls (the clock moves only by reconnection waits, far short of a poll): the
        // reconnection's fetch brings the kill.
        #expect(await f.clock.reconnect { f.provider.isKillSwitchActive })
        #expect(restarted.streamCount == 1)
    }

    @Test func noStreamAndNoRequestWhileThePathIsDown() async throws {
        let f = try Self.fixture()
        defer { f.stop() }
        let loop = await Self.start(f)
        defer { loop.cancel() }
        f.reachability.set(false)
        #expect(await eventually { f.server.streamCount == 0 && f.provider.openStreamCount == 0 })
        let count = f.server.requestCount
        f.server.document = Self.killed(true, version: "p1")
        // An hour on the clock: the poll timer armed before the path went down fires, finds
        // no path, and the loop then waits for the path with no timer.
        f.clock.advance(by: .seconds(3_600))
        #expect(await Self.loopIdle(f))
        #expect(f.server.requestCount == count, "nothing is sent with the path down")
        #expect(!f.provider.isKillSwitchActive)
        // Path back: the stream reopens and its opening fetches the kill.
        f.reachability.set(true)
        #expect(await eventually { f.provider.isKillSwitchActive })
        #expect(await eventually { f.server.streamCount == 1 })
    }

    @Test func theBackgroundClosesTheStreamAfterTheGraceAndStopsPolling() async throws {
        let lifecycle = ManualLifecycle()
        let f = try Self.fixture(lifecycle: lifecycle, grace: .seconds(10))
        defer { f.stop() }
        let loop = await Self.start(f)
        defer { loop.cancel() }
        lifecycle.set(foreground: false)
        #expect(await eventually { !f.provider.isInForeground })
        // Within the grace the stream stays (a quick trip to the background costs nothing):
        // the close waits for the grace's timer.
        #expect(await eventually { f.clock.sleeperDeadlines.contains { f.clock.now.duration(to: $0) == .seconds(10) } })
        #expect(f.server.streamCount == 1 && f.provider.openStreamCount == 1)
        f.clock.advance(by: .seconds(10))
        #expect(await eventually { f.server.streamCount == 0 && f.provider.openStreamCount == 0 })
        let count = f.server.requestCount
        f.server.document = Self.killed(true, version: "b1")
        // Two hours on the clock: in the background the loop waits for the foreground, with
        // no poll timer.
        f.clock.advance(by: .seconds(7_200))
        #expect(await Self.loopIdle(f))
        #expect(f.server.requestCount == count, "no poll and no stream in the background")
        // Foreground after the inactivity: one unconditional fetch, and the stream again.
        lifecycle.set(foreground: true)
        #expect(await eventually { f.provider.isKillSwitchActive })
        let resume = try #require(f.server.requests.dropFirst(count).first { $0.route != "GET /events" })
        #expect(resume.ifNoneMatch == nil && resume.flagConfigEtag == nil, "a resume is unconditional (OFREP ADR-0008)")
        #expect(await eventually { f.server.streamCount == 1 })
    }

    @Test func aQuickTripToTheBackgroundKeepsTheStreamAndFetchesOnlyWhenOld() async throws {
        let lifecycle = ManualLifecycle()
        let f = try Self.fixture(lifecycle: lifecycle)
        defer { f.stop() }
        let loop = await Self.start(f)
        defer { loop.cancel() }
        let count = f.server.requestCount
        let trips = f.provider.cell.inspect { $0.streams.inactivityToken }
        for _ in 0..<5 {
            lifecycle.set(foreground: false)
            lifecycle.set(foreground: true)
        }
        #expect(await Self.handledLifecycle(10, since: trips, f))
        #expect(f.server.requestCount == count, "the last answer is fresh: no fetch on a flap")
        #expect(f.server.streamCount == 1)
        // Five seconds in the background: coming back fetches nothing either.
        lifecycle.set(foreground: false)
        #expect(await eventually { !f.provider.isInForeground })
        f.clock.advance(by: .seconds(5))
        lifecycle.set(foreground: true)
        #expect(await Self.handledLifecycle(12, since: trips, f))
        #expect(f.server.requestCount == count)
        // After more than a minute (the grace closed the stream), coming back fetches.
        lifecycle.set(foreground: false)
        #expect(await eventually { !f.provider.isInForeground })
        f.clock.advance(by: .seconds(61))
        #expect(await eventually { f.server.streamCount == 0 })
        lifecycle.set(foreground: true)
        #expect(await eventually { f.server.requestCount > count && f.server.streamCount == 1 })
    }

    @Test func shutdownEndsEveryStream() async throws {
        let f = try Self.fixture()
        defer { f.server.stop() }
        let loop = await Self.start(f)
        f.provider.shutdown()
        await loop.value
        #expect(await eventually { f.server.streamCount == 0 && f.provider.openStreamCount == 0 })
    }

    @Test func streamsCanBeTurnedOff() async throws {
        let f = try ProviderFixture(streams: false)
        defer { f.stop() }
        let loop = f.run()
        defer { loop.cancel() }
        #expect(await f.provider.waitUntilReady(timeout: .seconds(5)) == .ready)
        // The answer advertised a stream; the provider keeps none open (it decides that in
        // every transition, the one that served the answer included).
        let streams = f.provider.cell.inspect { $0.streams }
        #expect(streams.advertised?.isEmpty == false && streams.open.isEmpty)
        #expect(f.server.streamCount == 0 && f.provider.openStreamCount == 0)
    }
}

extension TestClock {
    /// Moves the clock on by `backoff` — the longest reconnection wait of a stream whose
    /// backoff ceiling it is — until `condition` holds (at most twenty times). Streams wait out
    /// their reconnections on their owner's clock: a test whose clock stands still sees none.
    /// After each move it waits for the condition or for the next reconnection wait (a sleeper
    /// due within `backoff`: the connection failed again), never for a fixed time.
    func reconnect(
        isolation: isolated (any Actor)? = #isolation, backoff: Duration = .milliseconds(100), until condition: () -> Bool
    ) async -> Bool {
        for _ in 0..<20 {
            if condition() { return true }
            advance(by: backoff)
            let waiting = { self.sleeperDeadlines.contains { self.now.duration(to: $0) <= backoff } }
            _ = await eventually { condition() || waiting() }
        }
        return condition()
    }
}
