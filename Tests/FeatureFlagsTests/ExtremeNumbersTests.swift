import FeatureFlagsUI
import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting
import FlagServer

/// Numbers at the edge — from a response header, a stream event, a file or the configuration —
/// never crash: Swift traps when a `Double` beyond `Int64` becomes an integer or a `Duration`,
/// and when a `Duration` beyond `Int64` seconds is read or slept on. Each case here trapped
/// before it was bounded.
@Suite("Extreme numbers")
struct ExtremeNumbersTests {
    static let huge = String(repeating: "9", count: 30)

    // MARK: From the network

    @Test func aRetryAfterBeyondAnyDurationIsCutToTheLongestHonoured() {
        let t = ProviderStateTests()
        for seconds in [1e30, .infinity, 9.3e18, Double(Int64.max), 1.8e20] {
            var s = t.state()
            _ = s.apply(t.report(t.startFetch(&s), .failed(.httpStatus(503, retryAfter: seconds))), at: t.at(10))
            #expect(s.retryNotBefore == .seconds(10 + 86_400), "\(seconds)")
            #expect(s.lastError?.description.contains("retry after") == true)
        }
        // Nonsense that no header yields but a caller's own error can hold: no wait at all.
        for seconds in [-1e30, -.infinity, .nan] {
            var s = t.state()
            _ = s.apply(t.report(t.startFetch(&s), .failed(.httpStatus(503, retryAfter: seconds))), at: t.at(10))
            #expect(s.retryNotBefore == .seconds(10), "\(seconds)")
        }
    }

    @Test func anErrorSaysAnyRetryAfterWithoutTrapping() {
        #expect(FetchError.httpStatus(429, retryAfter: 1e30).description == "HTTP 429, retry after \(Int.max) s")
        #expect(FetchError.httpStatus(429, retryAfter: -.infinity).description == "HTTP 429, retry after \(Int.min) s")
        #expect(FetchError.httpStatus(429, retryAfter: .nan).description == "HTTP 429, retry after 0 s")
        #expect(FetchError.timeout(.seconds(Int64.max)).description == "no answer within \(Int64.max) ms")
    }

    @Test func aServerAskingToWaitForeverIsHeardOverLoopback() async throws {
        let f = try ProviderFixture()
        defer { f.stop() }
        f.server.fault = .status(503, retryAfter: Self.huge)
        guard case .failed(let error) = await f.provider.refresh() else {
            Issue.record("expected the fetch to fail")
            return
        }
        #expect(error.retryAfter == 1e30)
        #expect(error.description.hasPrefix("HTTP 503, retry after"))
        // The wait is a day (the longest honoured), not a trap: the next refresh waits.
        let requests = f.server.requestCount
        #expect(await f.provider.refresh() == .skipped("waiting for Retry-After"))
        #expect(f.server.requestCount == requests)
    }

    @Test func aRefetchEventsTimeBeyondInt64IsNoTime() {
        func lastModified(_ json: String) -> String?? {
            guard case .refetch(_, let lastModified)? = ChangeStream.refetch(in: ServerSentEvent(data: json)) else { return nil }
            return lastModified
        }
        #expect(lastModified(#"{"type":"refetchEvaluation","lastModified":1e30}"#) == .some(nil))
        #expect(lastModified(#"{"type":"refetchEvaluation","lastModified":-1e30}"#) == .some(nil))
        #expect(lastModified(#"{"type":"refetchEvaluation","lastModified":9223372036854775808.0}"#) == .some(nil))
        #expect(lastModified(#"{"type":"refetchEvaluation","lastModified":1700000000.9}"#) == .some("1700000000"))
    }

    // MARK: From the disk

    @Test func aStoredTimeThatIsNotFiniteIsADamagedFile() throws {
        let snapshot = FlagSnapshot(values: ["x": 1], version: "v", fetchedAt: Date(timeIntervalSince1970: 1_750_000_000), ttl: 60)
        let good = SnapshotCodec.encode(StoredFlags(snapshot: snapshot, etag: nil))
        #expect(throws: Never.self) { try good.withUnsafeBytes { try SnapshotCodec.decode($0) } }
        // Byte 0 is the encoding, byte 1 the fields present, then the fetch time's 8 bytes.
        for bad in [-Double.infinity, .infinity, .nan] {
            var bytes = good
            for i in 0..<8 { bytes[2 + i] = UInt8(truncatingIfNeeded: bad.bitPattern >> UInt64(8 * i)) }
            #expect(throws: ByteDecodingError.self, "\(bad)") { try bytes.withUnsafeBytes { try SnapshotCodec.decode($0) } }
        }
    }

    @Test func aLaunchCountAtTheEndOfIntCountsOn() throws {
        let dir = TempDir()
        let path = dir.url("flags.lkg.launches").path
        try FileIO.writeAtomically(Array(#"{"format":1,"unhealthy_launches":9223372036854775807,"healthy":{}}"#.utf8), to: path)
        let (journal, problem) = LaunchJournal.read(path)
        #expect(problem == nil)
        let (next, safe) = CrashLoopGuard().launch(journal, fingerprint: "f", lastKnownGood: nil)
        #expect(next.unhealthyLaunches > journal.unhealthyLaunches)
        #expect(safe != nil)
    }

    @Test func anAgeBeyondIntIsShownNotTrapped() {
        #expect(FlagEvent.stale(age: .infinity).description.contains("age=\(Int.max)s"))
        #expect(FlagEvent.stale(age: 1e300).description.contains("age=\(Int.max)s"))
        #expect(FlagText.age(.infinity) == "\(Int.max / 86_400)d")
        #expect(FlagText.age(.nan) == "0s")
        #expect(FlagText.age(90) == "90s")
    }

    // MARK: From the configuration

    @Test func durationsOfCenturiesAreCutToTheLongestWait() {
        var configuration = FeatureFlagProvider.Configuration(pollInterval: .seconds(Int64.max), heartbeatDeadline: .seconds(Int64.max))
        #expect(configuration.pollInterval == .longestWait)
        #expect(configuration.heartbeatDeadline == .longestWait)
        configuration.pollInterval = .seconds(Int64.max)
        #expect(configuration.pollInterval == .longestWait)
        configuration.pollInterval = .seconds(-5)
        #expect(configuration.pollInterval == FeatureFlagProvider.Configuration.minimumPollInterval)
    }

    @Test func aJitterThatIsNotANumberIsNone() {
        var configuration = FeatureFlagProvider.Configuration(jitter: .nan)
        #expect(configuration.jitter == 0)
        configuration.jitter = .infinity
        #expect(configuration.jitter == 0.5)
        configuration.jitter = .nan
        #expect(configuration.jitter == 0)
        let t = ProviderStateTests()
        var s = ProviderState(
            context: t.a, served: ServedState(t.prepared(["x": 1]), source: .fallback, status: .notReady, reasonOverride: .cached),
            pathUp: true, configuration: configuration, base: t.base, random: SplitMix(seed: 7))
        #expect(s.nextAttempt(after: .updated([]), at: .zero) == configuration.pollInterval)
    }

    @Test func aBackoffOfAnyShapeStaysWithinTheLongestWait() {
        var generator = SplitMix(seed: 3)
        for (initial, maximum) in [
            (Duration.seconds(1), Duration.seconds(Int64.max)), (.seconds(Int64.max), .seconds(Int64.max)),
            (.seconds(-10), .seconds(300)), (.seconds(1), .seconds(-300)),
        ] {
            let backoff = Backoff(initial: initial, multiplier: 2, maximum: maximum)
            for failures in [1, 2, 40, 70, 10_000] {
                let ceiling = backoff.ceiling(afterFailures: failures)
                let delay = backoff.delay(afterFailures: failures, using: &generator)
                #expect(ceiling >= .zero && ceiling <= .longestWait, "\(initial) \(maximum) \(failures)")
                #expect(delay >= .zero && delay <= ceiling)
            }
        }
    }

    @Test func aPollIntervalOfCenturiesPlansAPollWithoutTrapping() {
        let t = ProviderStateTests()
        var s = ProviderState(
            context: t.a, served: ServedState(t.prepared(["x": 1]), source: .fallback, status: .notReady, reasonOverride: .cached),
            pathUp: true, configuration: .init(pollInterval: .seconds(Int64.max)), base: t.base, random: SplitMix(seed: 7))
        let next = s.nextAttempt(after: .updated([]), at: .seconds(10))
        #expect(next.map { $0 > .seconds(10) && $0 <= .seconds(10) + .longestWait * 1.5 } == true)
        #expect(next.map { $0.milliseconds > 0 } == true)
    }

    @Test func aSleepOfCenturiesIsTheLongestWait() async {
        let test = TestClock()
        let clock = makeElapsedClock(test)
        let sleeper = Task { try await clock.sleep(until: .seconds(Int64.max)) }
        await test.sleepers(atLeast: 1)
        #expect(test.sleeperDeadlines.map { test.now.duration(to: $0) } == [.longestWait])
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
    }

    /// The system clocks sleep until the same bounded deadline (`boundedDeadline`), which the
    /// test above shows a sleep goes through; no wall-clock sleep is needed to check it.
    @Test func theSystemClocksBoundADeadlineOfCenturies() {
        for clock in [ContinuousElapsedClock() as any ElapsedClock, CoarseElapsedClock()] {
            let before = clock.now()
            let bounded = clock.boundedDeadline(.seconds(Int64.max))
            #expect(bounded >= before + .longestWait && bounded <= clock.now() + .longestWait)
            #expect(clock.boundedDeadline(.seconds(5)) == .seconds(5))
        }
    }

    @Test func aHeartbeatDeadlineOfCenturiesStillOpensTheStream() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let recorder = ChangeStreamTests.Recorder()
        let stream = recorder.stream(ChangeStreamTests.events(server), heartbeatDeadline: .seconds(Int64.max))
        defer { stream.shutdown() }
        stream.start()
        #expect(await eventually { recorder.opens == 1 })
    }

    @Test func aKillHoldWhoseTimeIsNotFiniteIsNotRead() {
        let hold = KillHold(since: Date(timeIntervalSince1970: 1_750_000_000), context: "c")
        let good = hold.encoded()
        #expect(KillHold.decode(good[...]) == hold)
        var bad = good
        for i in 0..<8 { bad[1 + i] = UInt8(truncatingIfNeeded: (-Double.infinity).bitPattern >> UInt64(8 * i)) }
        #expect(KillHold.decode(bad[...]) == nil)
    }

    @Test func aFetchBudgetOfCenturiesStillFetches() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let fetcher = FlagFetcher(
            endpoint: .json(post: server.flagsURL), configuration: .init(budget: .seconds(Int64.max)))
        defer { fetcher.shutdown() }
        guard case .fetched = await fetcher.fetch(auraPersonal) else {
            Issue.record("expected the fetch to succeed")
            return
        }
    }
}
