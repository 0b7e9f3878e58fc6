import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
@testable import FlagServer

@Suite("FlagServer")
struct FlagServerTests {
    @Test func bindsLoopbackOnAFreePort() throws {
        let a = try FlagServer(document: .seedExample)
        let b = try FlagServer(document: .seedExample)
        defer { a.stop(); b.stop() }
        #expect(a.port != 0 && b.port != 0 && a.port != b.port)
        #expect(a.baseURL.absoluteString == "http://127.0.0.1:\(a.port)")
        #expect(a.flagsURL.absoluteString == "http://127.0.0.1:\(a.port)/flags")
    }

    @Test func aDocumentFromItsFlagsVersionAndRulesIsServed() async throws {
        let document = ServerDocument(
            flags: ["new_checkout": FlagEntry(value: false), "limit": FlagEntry(value: 20)], version: "7",
            rules: [.init(name: "pilot", conditions: ["venue": ["venue-42"]], flags: ["new_checkout": FlagEntry(value: true)])])
        #expect(document.version == "7" && document.flags.count == 2)
        let server = try FlagServer(document: document)
        defer { server.stop() }
        let fetcher = FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: .loopback)
        let pilot = try #require(snapshot(of: await fetcher.fetch(EvaluationContext(attributes: ["venue": "venue-42"]))))
        let other = try #require(snapshot(of: await fetcher.fetch(EvaluationContext(attributes: ["venue": "venue-1"]))))
        #expect(pilot.version == "7" && pilot.flags["new_checkout"]?.value == true && pilot.flags["limit"]?.value == 20)
        #expect(other.flags["new_checkout"]?.value == false)
    }

    @Test func routesAndTheirErrors() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        func raw(_ request: String) -> Int? {
            guard let connection = RawConnection(port: server.port) else { return nil }
            connection.send(request)
            return connection.status()
        }
        #expect(raw("GET /nope HTTP/1.1\r\nHost: x\r\n\r\n") == 404)
        #expect(raw("PUT /flags HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n") == 405)
        #expect(raw("POST /flags/venue-1.json HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n") == 405)
        #expect(raw("POST /flags HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n[1,2]") == 400)
        #expect(raw("POST /flags HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\n{x}") == 400)
        #expect(raw("garbage\r\n\r\n") == 400)
        #expect(raw("POST /flags HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") == 200)
        #expect(raw("POST /flags HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n") == 501)
        #expect(raw("POST /flags HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n") == 200)
        // Errors never carry a context, so faults do not apply to them and the log says so.
        #expect(server.requests.filter { $0.contextFingerprint == nil }.count >= 4)
    }

    @Test func queryParametersTarget() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let client = FlagFetcher(endpoint: .json(urlTemplate: server.baseURL.absoluteString + "/flags?partner={partner}&plan_tier={plan_tier}&targetingKey={targetingKey}"), configuration: .loopback)
        defer { client.shutdown() }
        let result = await client.fetch(EvaluationContext(targetingKey: "u", partner: "zenithsat", planTier: "business"))
        #expect(snapshot(of: result)?.flags["plan_displayName"]?.value == "ZenithSat Pro")
        #expect(server.requests.first?.contextFingerprint == EvaluationContext(targetingKey: "u", partner: "zenithsat", planTier: "business").fingerprint)
    }

    @Test func aRefetchsConfigurationParametersAreNotPartOfTheContext() async throws {
        // OFREP ADR-0008: a refetch after a stream event carries flagConfigEtag and
        // flagConfigLastModified; the same user must keep the same context fingerprint.
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let user = EvaluationContext(targetingKey: "u", partner: "zenithsat", planTier: "business")
        let template = server.baseURL.absoluteString + "/flags?partner={partner}&plan_tier={plan_tier}&targetingKey={targetingKey}"
        for suffix in ["", "&flagConfigEtag=%22r7%22&flagConfigLastModified=1750000000"] {
            let client = FlagFetcher(endpoint: .json(urlTemplate: template + suffix), configuration: .loopback)
            defer { client.shutdown() }
            _ = await client.fetch(user)
        }
        #expect(server.requests.count == 2)
        #expect(server.requests.allSatisfy { $0.contextFingerprint == user.fingerprint })
        #expect(server.requests.last?.flagConfigEtag == "\"r7\"")
    }

    @Test func requestSizeLimits() throws {
        let server = try FlagServer(document: .seedExample, configuration: .init(maxHeaderBytes: 1_024, maxBodyBytes: 512))
        defer { server.stop() }
        let big = RawConnection(port: server.port)
        big?.send("GET /flags HTTP/1.1\r\nHost: x\r\nX-Filler: " + String(repeating: "a", count: 4_000) + "\r\n\r\n")
        #expect(big?.status() == 431)
        // A request line longer than the whole limit is a target too long (RFC 9112 §3), with
        // its line end come or not.
        for end in ["\r\n", ""] {
            let long = RawConnection(port: server.port)
            long?.send("GET /flags?x=" + String(repeating: "a", count: 2_000) + " HTTP/1.1" + end)
            #expect(long?.status() == 414, "\(end.debugDescription)")
        }
        let body = RawConnection(port: server.port)
        body?.send("POST /flags HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
        #expect(body?.status() == 413)
        // RFC 9110 §8.6: Content-Length is digits only; two of them (joined) are refused too.
        for length in ["-3", "+3", "3, 3", "0x3", "", " "] {
            let bad = RawConnection(port: server.port)
            bad?.send("POST /flags HTTP/1.1\r\nHost: x\r\nContent-Length: \(length)\r\n\r\n{}")
            #expect(bad?.status() == 400, "\(length.debugDescription)")
        }
        let huge = RawConnection(port: server.port)
        huge?.send("POST /flags HTTP/1.1\r\nHost: x\r\nContent-Length: \(String(repeating: "9", count: 40))\r\n\r\n")
        #expect(huge?.status() == 413)
    }

    @Test func connectionsAreBounded() async throws {
        // Idle places are kept for the whole test, however slow the machine (the idle timeout
        // would otherwise free one under a loaded ThreadSanitizer run).
        let server = try FlagServer(
            document: .seedExample, configuration: .init(maxConnections: 2, evictionGrace: .seconds(600), idleTimeout: .seconds(600)))
        defer { server.stop() }
        let idle = [RawConnection(port: server.port), RawConnection(port: server.port)]
        #expect(idle.allSatisfy { $0 != nil })
        #expect(await eventually { server.connectionCount == 2 })
        let third = RawConnection(port: server.port)
        third?.send("GET /flags HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(third?.status() == 503)
        #expect(server.connectionCount == 2)
    }

    /// The reservation binds the port while the listener still holds it: there is no instant
    /// in which another socket could be given the port (a parallel test run once took it so).
    @Test func aPortPassesToItsReservationWithoutAFreeInstant() throws {
        let (listener, port) = try Socket.listen(host: "127.0.0.1", port: 0)
        #expect(PortReservation(port: port) == nil, "a listener's port cannot be reserved unless it allows sharing")
        Socket.allowSharing(listener)
        let hold = PortReservation(port: port, sharing: true)
        #expect(hold?.port == port)
        close(listener)
        #expect(RawConnection(port: port) == nil, "the reservation does not listen")
        _ = hold
    }

    /// A server cannot come back on a port that a listener which does not share it took
    /// meanwhile (a reservation is not a listener: a socket naming the port may still bind it):
    /// the init throws, and that listener keeps the port.
    @Test func aServerCannotReturnToAPortAnotherListenerTook() throws {
        let hold = try #require(PortReservation())
        let (intruder, port) = try Socket.listen(host: "127.0.0.1", port: hold.port)
        defer { close(intruder) }
        #expect(port == hold.port)
        #expect(throws: (any Error).self) { try FlagServer(document: .seedExample, returningTo: hold) }
        let connection = try #require(RawConnection(port: port), "the other listener still has the port")
        _ = connection
    }

    @Test func aServerCanGoDownHoldingItsPortAndComeBackOnIt() throws {
        let server = try FlagServer(document: .seedExample)
        let port = server.port
        var hold = server.stopHoldingPort()
        #expect(hold?.port == port)
        // Down: connecting is refused, and the port is bound, so a server asking for any free
        // port (port 0, as every test's does) is never given it.
        #expect(RawConnection(port: port) == nil)
        let others = try (0..<20).map { _ in try FlagServer(document: .seedExample) }
        #expect(others.allSatisfy { $0.port != port })
        for other in others { other.stop() }
        #expect(server.stopHoldingPort() == nil, "already stopped")
        // Back on it, taken over while the reservation still holds it.
        let back = try FlagServer(document: .seedExample, returningTo: try #require(hold))
        defer { back.stop() }
        hold = nil
        let connection = try #require(RawConnection(port: port))
        connection.send("GET /flags HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(connection.status() == 200)
    }

    @Test func stopEndsHangingConnectionsPromptly() async throws {
        let server = try FlagServer(document: .seedExample)
        server.fault = .hangBeforeHeaders
        let hanging = (0..<3).compactMap { _ in RawConnection(port: server.port) }
        for connection in hanging { connection.send("POST /flags HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n") }
        #expect(await eventually { server.requestCount == 3 })
        let clock = ContinuousClock()
        let start = clock.now
        server.stop()
        #expect(clock.now - start < TestTiming.scaled(.seconds(1)))
        #expect(server.connectionCount == 0)
        for connection in hanging { #expect(connection.receive(timeout: 500) == "") }
        server.stop()  // idempotent
    }

    @Test func etagsAreStrongStableAndCompareWeakly() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let client = FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: .loopback)
        defer { client.shutdown() }
        let first = try #require(fetched(await client.fetch(auraPersonal))?.etag)
        let second = try #require(fetched(await client.fetch(auraPersonal))?.etag)
        #expect(first == second)
        #expect(first.value.hasPrefix("\"") && !first.value.hasPrefix("W/"))
        for tag in ["W/" + first.value, "\"other\", " + first.value, "*"] {
            #expect(await client.fetch(auraPersonal, ifNoneMatch: EntityTag(tag, endpoint: first.endpoint)) == .notModified, "\(tag)")
        }
        // Another context's document has another tag.
        let business = try #require(fetched(await client.fetch(auraBusiness))?.etag)
        #expect(business != first)
        // A document change changes the tag.
        var changed = ServerDocument.seedExample
        changed.base.version = "2025-08-05T00:00:00Z"
        server.document = changed
        #expect(snapshot(of: await client.fetch(auraPersonal, ifNoneMatch: first))?.version == "2025-08-05T00:00:00Z")
    }

    @Test func requestLogAndCallback() async throws {
        let seen = Locked<[FlagServer.RequestRecord]>([])
        let server = try FlagServer(document: .seedExample, onRequest: { record in seen.withLock { $0.append(record) } })
        defer { server.stop() }
        let client = FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: .init(budget: TestTiming.loopbackBudget, headers: ["X-Api-Key": "k"]))
        defer { client.shutdown() }
        _ = await client.fetch(auraPersonal)
        server.fault = .status(503, retryAfter: "1")
        _ = await client.fetch(auraPersonal)
        let log = server.requests
        #expect(log.count == 2)
        #expect(log[0].index == 0 && log[1].index == 1)
        #expect(log[0].method == "POST" && log[0].path == "/flags")
        #expect(log[0].headers["x-api-key"] == "k")
        #expect(log[0].status == 200 && log[0].bytesSent > 100)
        #expect(log[0].fault == nil && log[1].fault == .status(503, retryAfter: "1"))
        #expect(log[1].status == 503)
        #expect(log.allSatisfy { $0.duration != nil })
        #expect(await eventually { seen.withLock { $0.count } == 2 })
        #expect(seen.withLock { $0.map(\.status) } == [200, 503])
        server.clearLog()
        #expect(server.requestCount == 0)
    }

    @Test func faultDescriptions() {
        let faults: [FlagServer.Fault] = [
            .hangBeforeHeaders, .stallMidBody, .closeConnection, .status(429, retryAfter: "5"), .garbageBody,
            .oversizedBody(bytes: 10), .oversizedChunkedBody(bytes: 10), .oversizedCloseDelimitedBody(bytes: 10), .endlessChunkedBody,
        ]
        #expect(Set(faults.map(\.description)).count == faults.count)
        #expect(FlagServer.Fault.status(429, retryAfter: "5").description == "status 429 retry-after 5")
    }
}
