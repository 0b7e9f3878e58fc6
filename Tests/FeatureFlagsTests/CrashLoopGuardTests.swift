import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting
import FlagServer

/// The crash-loop guard in process: the launch decision, the journal on disk (damaged,
/// unwritable), and the provider in safe mode against a loopback server.
@Suite("Crash-loop guard")
struct CrashLoopGuardTests {
    static let good = FlagSnapshot(values: ["crashy": false], version: "good", fetchedAt: Date(timeIntervalSince1970: 1_750_000_000), ttl: 86_400)
    static let bad = FlagSnapshot(values: ["crashy": true], version: "bad", fetchedAt: Date(timeIntervalSince1970: 1_750_000_100), ttl: 86_400)

    @Test func theDecisionCountsLaunchesAndNamesTheCrashValues() {
        let policy = CrashLoopGuard(launchesBeforeSafeMode: 2)
        var journal = LaunchJournal()
        journal.keepHealthy(Self.good, for: "ctx")
        let first = policy.launch(journal, fingerprint: "ctx", lastKnownGood: Self.bad)
        #expect(first.safe == nil && first.journal.unhealthyLaunches == 1)
        #expect(first.journal.crashDigest == LaunchJournal.digest(Self.bad))
        let second = policy.launch(first.journal, fingerprint: "ctx", lastKnownGood: Self.bad)
        #expect(second.safe == nil && second.journal.unhealthyLaunches == 2)
        let third = policy.launch(second.journal, fingerprint: "ctx", lastKnownGood: Self.bad)
        #expect(third.safe?.healthy == Self.good)
        #expect(third.safe?.crashDigest == LaunchJournal.digest(Self.bad))
        #expect(third.safe?.reason.contains("2 launches in a row") == true)
        // A context never healthy: the code defaults.
        let stranger = policy.launch(second.journal, fingerprint: "other", lastKnownGood: nil)
        #expect(stranger.safe != nil && stranger.safe?.healthy == nil)
        #expect(stranger.safe?.reason.contains("the code defaults") == true)
        #expect(CrashLoopGuard(launchesBeforeSafeMode: 0).launchesBeforeSafeMode == 1)
    }

    @Test func theJournalRoundTripsAndADamagedOneCountsFromZero() throws {
        let dir = TempDir()
        let path = dir.url("flags.lkg.launches").path
        var journal = LaunchJournal()
        journal.unhealthyLaunches = 3
        journal.crashDigest = "abc"
        journal.keepHealthy(Self.good, for: "ctx")
        try journal.write(to: path)
        let read = LaunchJournal.read(path)
        #expect(read.problem == nil)
        #expect(read.journal.unhealthyLaunches == 3 && read.journal.crashDigest == "abc")
        #expect(read.journal.healthy["ctx"]?.flags == Self.good.flags && read.journal.healthy["ctx"]?.version == "good")
        #expect(LaunchJournal.read(dir.url("missing").path).problem == nil)
        for damaged in ["", "{", "[]", #"{"format":2,"unhealthy_launches":1,"healthy":{}}"#, #"{"format":1,"unhealthy_launches":-1,"healthy":{}}"#] {
            try Data(damaged.utf8).write(to: URL(fileURLWithPath: path))
            let result = LaunchJournal.read(path)
            #expect(result.journal == LaunchJournal() && result.problem?.contains("damaged") == true, "\(damaged)")
        }
    }

    /// The journal nests a snapshot's values a few levels deeper than the answers they came in:
    /// the deepest value an answer can carry (and its metadata) must still read back, or the
    /// next launch reads the journal as damaged: it counts from zero and loses the healthy
    /// snapshots safe mode would serve.
    @Test func theDeepestValuesAnAnswerCarriesReadBackFromTheJournal() throws {
        let json = FlagEndpoint.json(urlTemplate: "https://cdn.example.com/flags/{targetingKey}.json")
        func answer(depth: Int) -> FlagSnapshot? {
            let value = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            let body = #"{"flags":{"deep":{"value":"# + value + #","metadata":{"m":"# + value + "}}}}"
            guard let decoded = try? json.decode(FlagResponse(status: 200, body: Array(body.utf8)), for: EvaluationContext(targetingKey: "u")),
                let flags = decoded.flags
            else { return nil }
            return FlagSnapshot(flags: flags, version: "deep", fetchedAt: Date(timeIntervalSince1970: 1_750_000_000), ttl: nil)
        }
        var depth = 1
        while answer(depth: depth + 1) != nil { depth += 1 }
        let deepest = try #require(answer(depth: depth))
        #expect(depth > 50, "the answer's own limit is what bounds it")
        let dir = TempDir()
        let path = dir.url("flags.lkg.launches").path
        var journal = LaunchJournal()
        journal.unhealthyLaunches = 1
        journal.keepHealthy(deepest, for: "ctx")
        try journal.write(to: path)
        let read = LaunchJournal.read(path)
        #expect(read.problem == nil)
        #expect(read.journal.unhealthyLaunches == 1 && read.journal.healthy["ctx"]?.flags == deepest.flags)
        // The deepest the fallback file itself reads (65 nested lists; 64 in metadata), which
        // other formats' answers may come closer to.
        var stored: FlagValue = .list([])
        for _ in 1..<65 { stored = .list([stored]) }
        guard case .list(let inner) = stored else { return }
        let extreme = FlagSnapshot(
            flags: ["deep": FlagEntry(value: stored, metadata: ["m": inner[0]])], version: "x",
            fetchedAt: Date(timeIntervalSince1970: 1_750_000_000), ttl: nil)
        let bytes = SnapshotCodec.encode(StoredFlags(snapshot: extreme, etag: nil))
        #expect(try bytes.withUnsafeBytes { try SnapshotCodec.decode($0) }.snapshot.flags == extreme.flags)
        journal.keepHealthy(extreme, for: "ctx")
        try journal.write(to: path)
        #expect(LaunchJournal.read(path).journal.healthy["ctx"]?.flags == extreme.flags)
    }

    @Test func aJournalThatWouldPassTheReadLimitLeavesOutTheOldestSnapshots() throws {
        let dir = TempDir()
        let path = dir.url("flags.lkg.launches").path
        var journal = LaunchJournal()
        journal.unhealthyLaunches = 2
        for n in 0..<4 {
            let snapshot = FlagSnapshot(
                values: ["text": .string(String(repeating: "\(n)", count: 3_000))], version: "\(n)",
                fetchedAt: Date(timeIntervalSince1970: Double(1_750_000_000 + n)), ttl: nil)
            journal.keepHealthy(snapshot, for: "c\(n)")
        }
        try journal.write(to: path, limit: 10_000)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).count <= 10_000)
        let read = LaunchJournal.read(path)
        #expect(read.problem == nil && read.journal.unhealthyLaunches == 2)
        #expect(read.journal.healthy.keys.sorted() == ["c1", "c2", "c3"], "the oldest left out")
    }

    @Test func theJournalKeepsAtMostSixteenContexts() {
        var journal = LaunchJournal()
        for n in 0..<20 {
            let snapshot = FlagSnapshot(values: ["n": .int(n)], version: "\(n)", fetchedAt: Date(timeIntervalSince1970: Double(n)), ttl: nil)
            journal.keepHealthy(snapshot, for: "c\(n)")
        }
        #expect(journal.healthy.count == LaunchJournal.capacity)
        #expect(journal.healthy["c0"] == nil && journal.healthy["c19"] != nil)
    }

    /// A provider with the guard on the fixture's store and server.
    static func provider(
        _ dir: TempDir, server: FlagServer, healthyAfter: Duration? = nil, clock: TestClock = TestClock(),
        lifecycle: any AppLifecycle = AlwaysForeground(), events: Locked<[FlagEvent]>? = nil
    ) -> FeatureFlagProvider {
        var configuration = FeatureFlagProvider.Configuration(
            eventHandler: { event in events?.withLock { $0.append(event) } }, changeStreams: false,
            crashLoopGuard: CrashLoopGuard(launchesBeforeSafeMode: 2, healthyAfter: healthyAfter))
        configuration.killSwitchKey = "kill_switch"
        return FeatureFlagProvider(
            context: EvaluationContext(targetingKey: "u"), fetcher: FlagFetcher(
                endpoint: .json(post: server.flagsURL), configuration: .init(budget: TestTiming.loopbackBudget)),
            store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), configuration: configuration, reachability: AlwaysReachable(),
            lifecycle: lifecycle, clock: clock)
    }

    static func document(_ values: [String: FlagValue]) -> ServerDocument {
        var document = ServerDocument.seedExample
        for (key, value) in values { document.base.flags[key] = FlagEntry(value: value) }
        document.base.version = FlagJSON.string(.object(values), sortedKeys: true)
        return document
    }

    /// Launches (providers) that fetch and never become healthy, `count` times.
    static func crashLaunches(_ count: Int, _ dir: TempDir, server: FlagServer) async {
        for _ in 0..<count {
            let provider = Self.provider(dir, server: server)
            _ = await provider.refresh()
            provider.waitForWrites()
            provider.shutdown()
        }
    }

    @Test func safeModeServesTheHealthyValuesUntilOtherValuesArrive() async throws {
        let dir = TempDir()
        let server = try FlagServer(document: Self.document(["crashy": false]))
        defer { server.stop() }
        let healthy = Self.provider(dir, server: server)
        _ = await healthy.refresh()
        healthy.markHealthy()
        healthy.waitForWrites()
        healthy.shutdown()

        server.document = Self.document(["crashy": true])
        await Self.crashLaunches(2, dir, server: server)

        let events = Locked<[FlagEvent]>([])
        let safe = Self.provider(dir, server: server, events: events)
        defer { safe.shutdown() }
        #expect(safe.safeMode?.hasPrefix("2 launches in a row ended before the app was marked healthy") == true)
        #expect(safe.value(FlagKey("crashy", default: true)) == false, "the last healthy values, before any fetch")
        #expect(safe.recentEvents.contains { $0.kind == .safeModeEntered })
        // The service still sends the crash values: they are kept, not served. It confirms
        // what is stored (a 304), which does not end safe mode either.
        _ = await safe.refresh()
        #expect(safe.safeMode != nil && safe.status == .error && safe.value(FlagKey("crashy", default: true)) == false)
        #expect(server.requests.last?.status == 304, "\(server.requests.map(\.status))")
        // The operator changes something (here: another flag): other values end safe mode.
        server.document = Self.document(["crashy": false, "other": 1])
        _ = await safe.refresh()
        #expect(safe.safeMode == nil && safe.status == .ready && safe.value(FlagKey("crashy", default: true)) == false)
        #expect(safe.recentEvents.contains { $0.kind == .safeModeLeft && ($0.message ?? "").contains("other than") })
    }

    @Test func aKillSwitchEndsSafeModeAndWins() async throws {
        let dir = TempDir()
        let server = try FlagServer(document: Self.document(["crashy": true]))
        defer { server.stop() }
        await Self.crashLaunches(2, dir, server: server)
        let safe = Self.provider(dir, server: server)
        defer { safe.shutdown() }
        #expect(safe.safeMode != nil)
        #expect(safe.value(FlagKey("crashy", default: false)) == false, "never healthy: the code default")
        server.document = Self.document(["crashy": true, "kill_switch": true])
        _ = await safe.refresh()
        #expect(safe.isKillSwitchActive && safe.safeMode == nil)
    }

    /// Whether the automatic mark's timer waits for a wake-up (the foreground, or the end of
    /// safe mode) rather than for the clock.
    static func healthTimerWaits(_ provider: FeatureFlagProvider) async -> Bool {
        await eventually { provider.cell.inspect { $0.healthSleep.sleeper != nil } }
    }

    /// A third launch after two that crashed on `crashy: true`, in safe mode, running with
    /// a 30 s automatic mark on a test clock.
    struct SafeLaunch {
        let dir = TempDir()
        let server: FlagServer
        let clock = TestClock()
        let safe: FeatureFlagProvider
        let loop: Task<Void, Never>

        init() async throws {
            server = try FlagServer(document: CrashLoopGuardTests.document(["crashy": true]))
            await CrashLoopGuardTests.crashLaunches(2, dir, server: server)
            safe = CrashLoopGuardTests.provider(dir, server: server, healthyAfter: .seconds(30), clock: clock)
            let safe = self.safe
            loop = Task { await safe.run() }
        }

        func stop() {
            loop.cancel()
            safe.shutdown()
            server.stop()
        }
    }

    @Test func theAppsMarkEndsSafeModeTheAutomaticOneDoesNot() async throws {
        let launch = try await SafeLaunch()
        defer { launch.stop() }
        let (dir, clock, safe) = (launch.dir, launch.clock, launch.safe)
        await clock.sleepers(atLeast: 2)
        clock.advance(by: .seconds(60))
        // The timer fired in safe mode: no mark; it waits for safe mode to end.
        #expect(await Self.healthTimerWaits(safe))
        #expect(safe.safeMode != nil, "the automatic mark never ends safe mode")
        safe.markHealthy()
        #expect(safe.safeMode == nil)
        #expect(safe.value(FlagKey("crashy", default: false)) == true, "the stored values again, as the app asked")
        safe.waitForWrites()
        #expect(LaunchJournal.read(LaunchJournal.path(besides: dir.url("flags.lkg"))).journal.unhealthyLaunches == 0)
    }

    @Test func theAutomaticMarkNeedsUnbrokenForegroundTime() async throws {
        let dir = TempDir()
        let server = try FlagServer(document: Self.document(["crashy": false]))
        defer { server.stop() }
        let clock = TestClock()
        let lifecycle = ManualLifecycle()
        let provider = Self.provider(dir, server: server, healthyAfter: .seconds(30), clock: clock, lifecycle: lifecycle)
        defer { provider.shutdown() }
        let loop = Task { await provider.run() }
        defer { loop.cancel() }
        let path = LaunchJournal.path(besides: dir.url("flags.lkg"))
        #expect(LaunchJournal.read(path).journal.unhealthyLaunches == 1)
        _ = await provider.refresh()
        await clock.sleepers(atLeast: 2)
        clock.advance(by: .seconds(20))
        lifecycle.set(foreground: false)
        #expect(await eventually { !provider.isInForeground })
        clock.advance(by: .seconds(20))
        // The timer fired at 30 s, found the trip to the background and waits for the foreground.
        #expect(await Self.healthTimerWaits(provider))
        provider.waitForWrites()
        #expect(LaunchJournal.read(path).journal.unhealthyLaunches == 1, "20 s, a trip to the background, 20 s: not yet")
        lifecycle.set(foreground: true)
        #expect(await eventually { provider.isInForeground })
        #expect(await eventually {
            clock.advance(by: .seconds(31))
            provider.waitForWrites()
            return LaunchJournal.read(path).journal.unhealthyLaunches == 0
        })
        #expect(LaunchJournal.read(path).journal.healthy[EvaluationContext(targetingKey: "u").fingerprint]?.flags["crashy"]?.value == false)
    }

    @Test func afterTheFixEndsSafeModeTheAutomaticMarkCountsAgain() async throws {
        let launch = try await SafeLaunch()
        defer { launch.stop() }
        let (dir, server, clock, safe) = (launch.dir, launch.server, launch.clock, launch.safe)
        let path = LaunchJournal.path(besides: dir.url("flags.lkg"))
        // Past the 30 s in safe mode: the automatic mark is not taken; the timer waits for
        // safe mode to end.
        await clock.sleepers(atLeast: 2)
        clock.advance(by: .seconds(31))
        #expect(await Self.healthTimerWaits(safe))
        safe.waitForWrites()
        #expect(safe.safeMode != nil)
        #expect(LaunchJournal.read(path).journal.unhealthyLaunches == 3)
        // The operator's fix arrives after that: safe mode ends, and 30 s of foreground
        // later the launch is healthy — the next launch starts normally.
        server.document = Self.document(["crashy": false])
        _ = await safe.refresh()
        #expect(safe.safeMode == nil)
        #expect(await eventually { clock.sleeperDeadlines.contains { clock.now.duration(to: $0) == .seconds(30) } })
        clock.advance(by: .seconds(30))
        #expect(await eventually {
            safe.waitForWrites()
            return LaunchJournal.read(path).journal.unhealthyLaunches == 0
        })
        #expect(LaunchJournal.read(path).journal.healthy[EvaluationContext(targetingKey: "u").fingerprint]?.flags["crashy"]?.value == false)
    }

    @Test func anUnwritableJournalIsReportedAndTheLaunchGoesOn() throws {
        let dir = TempDir()
        let server = try FlagServer(document: Self.document(["crashy": false]))
        defer { server.stop() }
        // A directory where the journal file should be: it cannot be written.
        try FileManager.default.createDirectory(at: dir.url("flags.lkg.launches"), withIntermediateDirectories: true)
        let events = Locked<[FlagEvent]>([])
        let provider = Self.provider(dir, server: server, events: events)
        defer { provider.shutdown() }
        #expect(provider.safeMode == nil)
        #expect(provider.recentEvents.contains { $0.kind == .fallbackRejected && ($0.message ?? "").contains("launch journal") })
        #expect(provider.recentEvents.contains { $0.kind == .fallbackWriteFailed && ($0.message ?? "").contains("launch journal") })
        _ = events
    }
}
