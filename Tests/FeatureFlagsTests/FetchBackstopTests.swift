import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting
import FlagServer

/// The transport's own timeout is a real-time backstop behind the fetcher's budget: just past
/// the budget with the system clock; with an injected clock (a test's), whose time is not real
/// time, far enough (≥ 120 s) that a stalled machine never ends a fetch that clock has not ended.
@Suite("The transport's real-time backstop")
struct FetchBackstopTests {
    /// Real loopback HTTP through URLSession, recording the timeout each request was given.
    final class RecordingTransport: FlagTransport {
        private let inner = URLSessionTransport()
        private let seen = Locked<[TimeInterval]>([])
        var timeouts: [TimeInterval] { seen.withLock { $0 } }

        func send(_ request: FlagRequest, maxBytes: Int, timeout: TimeInterval) async throws(FetchError) -> FlagResponse {
            seen.withLock { $0.append(timeout) }
            return try await inner.send(request, maxBytes: maxBytes, timeout: timeout)
        }

        func shutdown() { inner.shutdown() }
    }

    /// The timeouts the transport was given for one fetch. `mustAnswer`: the fetch must bring
    /// the flags (with the system clock a starved test process may reach the budget first: the
    /// timeout was recorded when the request was sent, all the same).
    func fetchOnce(clock: any Clock<Duration>, budget: Duration, mustAnswer: Bool = true) async throws -> [TimeInterval] {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let transport = RecordingTransport()
        defer { transport.shutdown() }
        var configuration = FlagFetcher.Configuration.loopback
        configuration.budget = budget
        let fetcher = FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: configuration, transport: transport, clock: clock)
        defer { fetcher.shutdown() }
        let result = await fetcher.fetch(auraPersonal)
        if mustAnswer { #expect(snapshot(of: result) != nil, "\(result)") }
        return transport.timeouts
    }

    @Test func withTheSystemClockTheBackstopIsJustPastTheBudget() async throws {
        // The whole suite under ThreadSanitizer, beside a fuzzer and a build on two cores, once
        // left this process's fetch unanswered for 47 s: the figure does not need the answer.
        #expect(try await fetchOnce(clock: ContinuousClock(), budget: .seconds(30), mustAnswer: false) == [31])
        #expect(
            try await fetchOnce(clock: ContinuousClock(), budget: .milliseconds(29_500), mustAnswer: false) == [31],
            "whole seconds, rounded up, plus one")
    }

    @Test func withAnInjectedClockTheBackstopIsTwoMinutesAtLeast() async throws {
        #expect(try await fetchOnce(clock: TestClock(), budget: .seconds(2)) == [120])
        #expect(try await fetchOnce(clock: TestClock(), budget: .seconds(300)) == [301], "a longer budget keeps its own margin")
    }
}
