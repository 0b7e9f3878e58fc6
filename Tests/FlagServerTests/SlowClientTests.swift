import FeatureFlags
import Foundation
import Testing
import TestSupport
@testable import FlagServer

/// Slow and non-reading clients cannot lock everyone else out: a request has a deadline
/// however often its bytes trickle in, a write gives up on a client that does not read, and
/// when every place is taken a new client takes the place of the connection stalled longest.
@Suite("Slow clients")
struct SlowClientTests {
    static let request = "GET /flags?venue=v1 HTTP/1.1\r\nHost: x\r\n\r\n"

    /// A document whose answer is `bytes` long: a client that does not read it fills every buffer.
    static func largeDocument(bytes: Int = 2 << 20) -> ServerDocument {
        ServerDocument(base: FlagDocument(version: "large", flags: ["blob": FlagEntry(value: .string(String(repeating: "x", count: bytes)))]))
    }

    /// Opens `count` connections that each send the start of a header and then nothing.
    /// Asks once and reads the whole answer, so the server has it rendered and cached: the
    /// requests that follow are answered at once.
    static func warm(_ server: FlagServer) async throws {
        let connection = try #require(RawConnection(port: server.port))
        connection.send("GET /flags?venue=v1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let answer = try await blocking { connection.receive(timeout: Int32(TestTiming.scaled(.seconds(30)).milliseconds)) }
        #expect(answer.hasPrefix("HTTP/1.1 200 "))
        // Its place is free again before the test takes every place.
        #expect(await eventually { server.connectionCount == 0 })
    }

    static func slowHeaders(_ count: Int, port: UInt16) throws -> [RawConnection] {
        try (0..<count).map { _ in
            let connection = try #require(RawConnection(port: port))
            connection.send("GET /flags HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            return connection
        }
    }

    @Test func aHeaderTrickledByteByByteIsCutOffAtTheRequestDeadline() async throws {
        let deadline = Duration.milliseconds(600)
        let server = try FlagServer(document: .seedExample, configuration: .init(idleTimeout: .seconds(30), requestTimeout: deadline))
        defer { server.stop() }
        let connection = try #require(RawConnection(port: server.port))
        let clock = ContinuousClock()
        let start = clock.now
        connection.send("GET /flags HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        // One byte every 50 ms restarted the idle timer forever; the deadline ends it. (On a
        // thread of its own: blocking socket calls must not hold the test executor's threads.)
        // The time is taken on that thread when the answer arrives: the hop back to the test's
        // executor waits for a cooperative thread, which a full parallel run keeps busy for
        // seconds (and which says nothing of the server).
        let (answer, took) = try await blocking { () -> (String, Duration) in
            var answer = ""
            while answer.isEmpty, clock.now - start < TestTiming.scaled(.seconds(10)) {
                guard connection.send("a") else { break }
                answer = connection.receive(timeout: 50)
            }
            return (answer, clock.now - start)
        }
        #expect(answer.hasPrefix("HTTP/1.1 408 "), "\(answer.prefix(40))")
        #expect(answer.contains("Connection: close"))
        #expect(took >= deadline)
        // The 408 itself shows the deadline acted (the idle timeout is 30 s); the bound only
        // says "well before the trickle would have ended", with room for a loaded machine.
        #expect(took < deadline + TestTiming.scaled(.seconds(8)))
        #expect(await eventually { server.connectionCount == 0 })
    }

    @Test func aBodyThatNeverCompletesIsCutOffAtTheRequestDeadline() async throws {
        let server = try FlagServer(document: .seedExample, configuration: .init(requestTimeout: .milliseconds(300)))
        defer { server.stop() }
        let connection = try #require(RawConnection(port: server.port))
        connection.send("POST /flags HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        #expect(try await blocking { connection.status(timeout: Int32(TestTiming.scaled(.seconds(5)).milliseconds)) } == 408)
    }

    @Test func anIdleConnectionWithNoRequestBegunClosesQuietly() async throws {
        let server = try FlagServer(document: .seedExample, configuration: .init(idleTimeout: .milliseconds(200), requestTimeout: .seconds(600)))
        defer { server.stop() }
        let connection = try #require(RawConnection(port: server.port))
        let clock = ContinuousClock()
        let start = clock.now
        // No request was begun: no 408, just the end of the connection, at the idle timeout
        // (200 ms; about 0.5 s alone). The bound only tells it from the request deadline (600 s).
        // The time is taken on the receiving thread when the end arrives, as above: the hop back
        // to the test's executor once took 21.8 s in a full parallel run, which says nothing of
        // the server.
        let (answer, took) = try await blocking { () -> (String, Duration) in
            let answer = connection.receive(timeout: Int32(TestTiming.scaled(.seconds(30)).milliseconds))
            return (answer, clock.now - start)
        }
        #expect(answer == "")
        #expect(took < TestTiming.scaled(.seconds(20)))
        #expect(await eventually { server.connectionCount == 0 })
    }

    @Test func aNormalClientIsServedWhileEveryPlaceIsTakenBySlowHeaders() async throws {
        // The attackers keep their places for the whole test: neither the request deadline nor
        // the idle timeout (5 s by default, which a loaded ThreadSanitizer run outlasted before the
        // first round) frees one. Only eviction does.
        let server = try FlagServer(
            document: .seedExample, configuration: .init(maxConnections: 4, idleTimeout: .seconds(600), requestTimeout: .seconds(600)))
        defer { server.stop() }
        let attackers = try Self.slowHeaders(4, port: server.port)
        #expect(await eventually { server.connectionCount == 4 })
        for round in 0..<3 {
            for attacker in attackers { attacker.send("a") }
            let client = try #require(RawConnection(port: server.port))
            client.send(Self.request)
            #expect(try await blocking { client.status() } == 200, "round \(round)")
        }
        #expect(server.evictionCount >= 1)
        #expect(server.requests.allSatisfy { $0.status == 200 })
    }

    @Test func aNormalClientIsServedWhileEveryPlaceIsTakenByClientsThatDoNotRead() async throws {
        // Nothing but eviction frees a place: not the send timeout, and not the idle timeout (a
        // round's client whose answer fit its socket buffer waits for its next request; a loaded
        // ThreadSanitizer run outlasted the 5 s default once, and one round needed no eviction).
        let server = try FlagServer(
            document: Self.largeDocument(),
            configuration: .init(maxConnections: 4, idleTimeout: .seconds(600), sendTimeout: .seconds(600)))
        defer { server.stop() }
        try await Self.warm(server)
        let attackers = try (0..<4).map { _ in try #require(RawConnection(port: server.port, receiveBufferBytes: 4_096)) }
        for attacker in attackers { attacker.send(Self.request) }
        #expect(await eventually { server.requestCount == 5 })
        // Every attacker's write waits for a reader that never comes.
        #expect(await eventually { server.stalledConnectionCount == 4 })
        // Every client stays open without reading its whole answer either, so every round finds
        // all places taken; the attackers, stalled longest, give theirs up.
        var clients: [RawConnection] = []
        for round in 0..<3 {
            let client = try #require(RawConnection(port: server.port))
            client.send(Self.request)
            #expect(try await blocking { client.status() } == 200, "round \(round)")
            clients.append(client)
        }
        #expect(server.evictionCount == 3)
        #expect(clients.count == 3)
    }

    @Test func aClientThatDoesNotReadIsClosedAtTheSendTimeout() async throws {
        let server = try FlagServer(document: Self.largeDocument(), configuration: .init(sendTimeout: .milliseconds(300)))
        defer { server.stop() }
        try await Self.warm(server)
        let attacker = try #require(RawConnection(port: server.port, receiveBufferBytes: 4_096))
        // Four pipelined requests, never read: more answer than the socket buffers hold.
        attacker.send(String(repeating: Self.request, count: 4))
        #expect(await eventually { server.requestCount >= 2 })
        // Without a send timeout the write waited for the reader forever.
        #expect(await eventually(within: TestTiming.scaled(.seconds(10))) { server.connectionCount == 0 })
        #expect(server.requests.dropFirst().contains { $0.bytesSent == 0 })
    }

    @Test func aClientThatReadsSlowlyButSteadilyGetsItsWholeAnswer() async throws {
        // The whole answer takes longer than the send timeout, each pause far less: the timeout
        // is for a stalled reader, not a slow one. The timeout is generous against a loaded
        // machine's scheduling stalls; the pauses make the reading outlast it.
        let size = 512 << 10
        let timeout = Duration.seconds(2)
        let server = try FlagServer(document: Self.largeDocument(bytes: size), configuration: .init(sendTimeout: timeout))
        defer { server.stop() }
        let reader = try #require(RawConnection(port: server.port, receiveBufferBytes: 4_096))
        reader.send("GET /flags?venue=v1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let (answer, took) = try await blocking { () -> ([UInt8], Duration) in
            let started = ContinuousClock.now
            var received: [UInt8] = []
            // Bounded: at most 4,096 reads, each waiting at most 5 s (scaled).
            for _ in 0..<4_096 {
                guard let bytes = reader.receiveSome(timeout: Int32(TestTiming.scaled(.seconds(5)).milliseconds)), !bytes.isEmpty else { break }
                received += bytes
                usleep(25_000)
            }
            return (received, ContinuousClock.now - started)
        }
        #expect(String(decoding: answer.prefix(16), as: UTF8.self).hasPrefix("HTTP/1.1 200 "))
        #expect(answer.count > size)
        #expect(took > timeout, "the reading took \(took), not longer than the send timeout: it proved nothing")
    }
}

/// The admission rule on its own, with instants given by hand.
@Suite("Connection table")
struct ConnectionTableTests {
    let start = ContinuousClock.now
    let grace = Duration.seconds(1)

    func admit(_ table: inout ConnectionTable, _ fd: Int32, limit: Int, at now: ContinuousClock.Instant, stalledFor grace: Duration) -> Bool {
        table.admit(fd, limit: limit, at: now, stalledFor: grace)
    }

    @Test func admitsUpToTheLimitWithoutEvicting() {
        var table = ConnectionTable()
        for fd in Int32(1000)..<1004 { #expect(admit(&table, fd, limit: 4, at: start, stalledFor: grace)) }
        #expect(table.count == 4)
        #expect(table.evictions == 0)
    }

    @Test func refusesWhenEveryConnectionMadeProgressWithinTheGrace() {
        var table = ConnectionTable()
        for fd in Int32(1000)..<1002 { _ = table.admit(fd, limit: 2, at: start, stalledFor: grace) }
        #expect(!admit(&table, 1002, limit: 2, at: start + .milliseconds(999), stalledFor: grace))
        #expect(table.count == 2)
        #expect(table.evictions == 0)
    }

    @Test func evictsTheConnectionStalledLongest() {
        var table = ConnectionTable()
        _ = table.admit(1000, limit: 2, at: start, stalledFor: grace)
        _ = table.admit(1001, limit: 2, at: start + .seconds(1), stalledFor: grace)
        // 1000 gets a request and answers it, then waits again: 1001 is now stalled longest.
        table.working(1000)
        table.stalled(1000, at: start + .milliseconds(2_500))
        #expect(admit(&table, 1002, limit: 2, at: start + .seconds(3), stalledFor: grace))
        #expect(table.evictions == 1)
        // 1001 is shut down and finishing; the next one can only evict 1000 or 1002.
        #expect(!admit(&table, 1003, limit: 2, at: start + .seconds(3), stalledFor: grace))
        #expect(admit(&table, 1003, limit: 2, at: start + .seconds(4), stalledFor: grace))
        #expect(table.evictions == 2)
        table.remove(1001)
        table.remove(1000)
        #expect(Set(table.descriptors) == [1002, 1003])
    }

    @Test func aWorkingConnectionIsNeverEvicted() {
        var table = ConnectionTable()
        _ = table.admit(1000, limit: 1, at: start, stalledFor: grace)
        table.working(1000)
        #expect(!admit(&table, 1001, limit: 1, at: start + .seconds(3_600), stalledFor: grace))
        // A write waiting for the peer to read stalls it; moving bytes again ends that.
        table.stalled(1000, at: start + .seconds(3_600))
        table.working(1000)
        table.stalled(1000, at: start + .seconds(3_601))
        #expect(!admit(&table, 1001, limit: 1, at: start + .milliseconds(3_601_500), stalledFor: grace))
        #expect(admit(&table, 1001, limit: 1, at: start + .seconds(3_602), stalledFor: grace))
    }

    @Test func stalledKeepsTheFirstInstant() {
        var table = ConnectionTable()
        _ = table.admit(1000, limit: 1, at: start, stalledFor: grace)
        // Bytes of a header trickling in are not progress: a later `stalled` does not renew it.
        table.stalled(1000, at: start + .seconds(5))
        #expect(admit(&table, 1001, limit: 1, at: start + .seconds(1), stalledFor: grace))
    }

    @Test func evictedConnectionsStillFinishingAreBounded() {
        var table = ConnectionTable()
        _ = table.admit(1000, limit: 1, at: start, stalledFor: .zero)
        #expect(admit(&table, 1001, limit: 1, at: start, stalledFor: .zero))
        // 1000 has not finished yet: a third would make two finishing for one place.
        #expect(!admit(&table, 1002, limit: 1, at: start, stalledFor: .zero))
        table.remove(1000)
        #expect(admit(&table, 1002, limit: 1, at: start, stalledFor: .zero))
    }
}
