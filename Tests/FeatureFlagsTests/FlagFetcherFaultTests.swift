import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FlagServer

/// Every fault the server can rehearse, seen from the client. Deadlines are short so the
/// suite stays fast; each failure must arrive within deadline + 150 ms.
/// Tests that measure wall-clock time and tests that load the machine with other processes,
/// kept apart: run one after the other, a SIGKILL loop cannot steal the CPU a deadline
/// measurement needs.
@Suite(.serialized) enum WallClockSensitive {}

extension WallClockSensitive {
@Suite("FlagFetcher under faults")
struct FlagFetcherFaultTests {
    static let deadline = TestTiming.scaled(.milliseconds(300))
    static let slack = TestTiming.scaled(.milliseconds(150))

    /// Runs one fetch under `fault`; returns the error and how long it took.
    private func failing(
        _ fault: FlagServer.Fault?, latency: Duration = .zero, deadline: Duration = deadline, maxBytes: Int = 1 << 20
    ) async throws -> (FetchError?, Duration, FlagServer) {
        let (server, client, _) = try makeServerAndFetcher(budget: deadline, maxBytes: maxBytes)
        defer { client.shutdown() }
        server.fault = fault
        server.latency = latency
        let clock = ContinuousClock()
        let start = clock.now
        let error = await fetchError(client, auraPersonal)
        return (error, clock.now - start, server)
    }

    @Test func hangBeforeHeadersTimesOutAtTheDeadline() async throws {
        let (error, elapsed, server) = try await failing(.hangBeforeHeaders)
        defer { server.stop() }
        #expect(error == .timeout(Self.deadline))
        #expect(error?.suggestsOffline == true)
        #expect(elapsed >= Self.deadline && elapsed < Self.deadline + Self.slack, "took \(elapsed)")
    }

    @Test func stallMidBodyTimesOut() async throws {
        let (error, elapsed, server) = try await failing(.stallMidBody)
        defer { server.stop() }
        #expect(error == .timeout(Self.deadline))
        #expect(elapsed < Self.deadline + Self.slack, "took \(elapsed)")
    }

    @Test func endlessChunkedBodyTimesOut() async throws {
        let (error, elapsed, server) = try await failing(.endlessChunkedBody)
        defer { server.stop() }
        #expect(error == .timeout(Self.deadline))
        #expect(elapsed < Self.deadline + Self.slack, "took \(elapsed)")
    }

    @Test func latencyBeyondTheDeadlineTimesOut() async throws {
        let (error, elapsed, server) = try await failing(nil, latency: .seconds(5))
        defer { server.stop() }
        #expect(error == .timeout(Self.deadline))
        #expect(elapsed < Self.deadline + Self.slack, "took \(elapsed)")
    }

    @Test func latencyWithinTheDeadlineSucceeds() async throws {
        let (server, client, _) = try makeServerAndFetcher(budget: TestTiming.scaled(.seconds(2)))
        defer { server.stop(); client.shutdown() }
        server.latency = .milliseconds(150)
        #expect(snapshot(of: await client.fetch(auraPersonal)) != nil)
        #expect((server.requests.first?.duration ?? .zero) >= .milliseconds(150))
    }

    @Test func closedConnectionFails() async throws {
        let (error, _, server) = try await failing(.closeConnection)
        defer { server.stop() }
        let error_ = try #require(error)
        #expect([FetchError.Kind.offline, .transport].contains(error_.kind), "unexpected \(error_)")
    }

    @Test func connectionRefusedIsOffline() async throws {
        let closed = try #require(PortReservation())
        let client = FlagFetcher(endpoint: .json(post: URL(string: "http://127.0.0.1:\(closed.port)/flags")!), configuration: .loopback)
        defer { client.shutdown() }
        let error = await fetchError(client, auraPersonal)
        #expect(error?.suggestsOffline == true, "\(String(describing: error))")
    }

    @Test(arguments: [500, 502, 400, 401, 403, 404])
    func statusCodes(_ status: Int) async throws {
        let (error, _, server) = try await failing(.status(status, retryAfter: nil))
        defer { server.stop() }
        #expect(error == .httpStatus(status, retryAfter: nil, detail: "injected status \(status)"))
        #expect(error?.isFatal == (status == 401 || status == 403))
    }

    @Test func retryAfterInSeconds() async throws {
        let (error, _, server) = try await failing(.status(429, retryAfter: "120"))
        defer { server.stop() }
        #expect(error == .httpStatus(429, retryAfter: 120, detail: "injected status 429"))
    }

    @Test func retryAfterAsHTTPDateAndISO8601() async throws {
        let now = Date(timeIntervalSince1970: 784_111_777)
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let client = FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: .loopback, now: { now })
        defer { client.shutdown() }
        server.fault = .status(503, retryAfter: "Sun, 06 Nov 1994 08:50:37 GMT")
        #expect(await fetchError(client, auraPersonal) == .httpStatus(503, retryAfter: 60, detail: "injected status 503"))
        server.fault = .status(503, retryAfter: "1994-11-06T08:49:47Z")
        #expect(await fetchError(client, auraPersonal) == .httpStatus(503, retryAfter: 10, detail: "injected status 503"))
        server.fault = .status(503, retryAfter: "whenever")
        #expect(await fetchError(client, auraPersonal) == .httpStatus(503, retryAfter: nil, detail: "injected status 503"))
    }

    @Test func garbageBodyIsADecodeError() async throws {
        let (error, _, server) = try await failing(.garbageBody)
        defer { server.stop() }
        guard let e = error?.endpointError, error?.kind == .decode else {
            Issue.record("expected a decode error, got \(String(describing: error))")
            return
        }
        #expect(e.code == .parseError)
    }

    @Test func oversizedBodyWithContentLength() async throws {
        let (error, elapsed, server) = try await failing(.oversizedBody(bytes: 2 << 20), deadline: TestTiming.scaled(.seconds(2)))
        defer { server.stop() }
        #expect(error == .payloadTooLarge(limit: 1 << 20))
        #expect(elapsed < TestTiming.scaled(.seconds(1)))
    }

    @Test func oversizedChunkedBodyIsCountedAsItArrives() async throws {
        let (error, elapsed, server) = try await failing(.oversizedChunkedBody(bytes: 3 << 20), deadline: TestTiming.scaled(.seconds(2)))
        defer { server.stop() }
        #expect(error == .payloadTooLarge(limit: 1 << 20))
        #expect(elapsed < TestTiming.scaled(.seconds(1)))
    }

    @Test func smallerLimitAppliesToRealDocuments() async throws {
        let (error, _, server) = try await failing(nil, deadline: TestTiming.scaled(.seconds(2)), maxBytes: 64)
        defer { server.stop() }
        #expect(error == .payloadTooLarge(limit: 64))
    }

    @Test func faultsCanBeClearedAtRunTime() async throws {
        let (server, client, _) = try makeServerAndFetcher(budget: Self.deadline)
        defer { server.stop(); client.shutdown() }
        server.fault = .status(503, retryAfter: nil)
        #expect(await fetchError(client, auraPersonal) != nil)
        server.fault = nil
        #expect(snapshot(of: await client.fetch(auraPersonal)) != nil)
    }

    @Test func cancellationStopsTheRequest() async throws {
        let (server, client, _) = try makeServerAndFetcher(budget: TestTiming.scaled(.seconds(5)))
        defer { server.stop(); client.shutdown() }
        server.fault = .hangBeforeHeaders
        let clock = ContinuousClock()
        let start = clock.now
        let task = Task { () -> FetchResult in await client.fetch(auraPersonal) }
        // Wait (bounded) until the request reached the server, then cancel.
        #expect(await eventually { server.requestCount == 1 })
        task.cancel()
        #expect(await task.value == .failed(.cancelled))
        #expect(clock.now - start < TestTiming.scaled(.seconds(2)))
    }

    @Test func deadlinePrecisionOverTwentyRuns() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        server.fault = .hangBeforeHeaders
        var overshoots: [Duration] = []
        for requested in [TestTiming.scaled(.milliseconds(100)), TestTiming.scaled(.milliseconds(250))] {
            let client = FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: .init(budget: requested))
            defer { client.shutdown() }
            for _ in 0..<10 {
                let clock = ContinuousClock()
                let start = clock.now
                let error = await fetchError(client, auraPersonal)
                let elapsed = clock.now - start
                #expect(error == .timeout(requested))
                #expect(elapsed >= requested && elapsed < requested + Self.slack, "requested \(requested), took \(elapsed)")
                overshoots.append(elapsed - requested)
            }
        }
        let sorted = overshoots.sorted()
        print("deadline precision: 20 runs (10 × 100 ms, 10 × 250 ms) overshoot min \(sorted.first!), median \(sorted[10]), max \(sorted.last!)")
    }
}
}

/// A server (or a middlebox) that resets a kept-alive connection when it is reused: libcurl
/// then resends a POST without its body and never completes. Every fetch must stay fast.
@Suite("FlagFetcher and reset connections")
struct ResetConnectionTests {
    @Test func aResetOfAReusedConnectionIsNeverAHang() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        server.fault = .resetReusedConnections
        let fetcher = FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: .loopback)
        defer { fetcher.shutdown() }
        // The hang ended only at the budget, as a timeout: every fetch must now succeed.
        for attempt in 1...4 {
            let result = await fetcher.fetch(auraPersonal)
            #expect(snapshot(of: result) != nil, "fetch \(attempt): \(result)")
        }
        #expect(server.requests.allSatisfy { $0.headers["connection"]?.lowercased() == "close" })
    }
}
