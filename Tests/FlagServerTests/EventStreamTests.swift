@testable import FeatureFlags
import Foundation
import Testing
import TestSupport
@testable import FlagServer

/// The flag server's change stream, `GET /events`: an OFREP-shaped `refetchEvaluation`
/// event for every document change, heartbeats, resumption, limits and the stream faults.
@Suite("FlagServer change streams")
struct EventStreamTests {
    /// A client of one change stream: the answer's head, then events as they come.
    final class StreamClient: Sendable {
        let connection: RawConnection
        let head: String
        private let parser: Locked<EventStreamParser>
        /// Lines of the stream received so far (comments included: the server's heartbeats).
        private let lines: Locked<Int>

        init(port: UInt16, lastEventID: String? = nil, request: String? = nil) throws {
            connection = try #require(RawConnection(port: port))
            let resume = lastEventID.map { "Last-Event-ID: \($0)\r\n" } ?? ""
            connection.send(request ?? "GET /events HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\(resume)\r\n")
            var received: [UInt8] = []
            let deadline = ContinuousClock.now + TestTiming.scaled(.seconds(5))
            while !received.containsHeadEnd, ContinuousClock.now < deadline, let more = connection.receiveSome(timeout: 100) {
                received += more
            }
            let end = received.headEnd ?? received.count
            head = String(decoding: received[..<end], as: UTF8.self)
            var parser = EventStreamParser()
            let early = try parser.feed(received.dropFirst(end))
            self.parser = Locked(parser)
            lines = Locked(received.dropFirst(end).filter { $0 == 0x0A }.count)
            pending = Locked(early)
        }

        /// Events that arrived with the head, handed out first.
        private let pending: Locked<[ServerSentEvent]>

        /// The events that arrive within `window` (stops early at `count`), and whether the
        /// stream was closed meanwhile.
        func events(count: Int = .max, within window: Duration) throws -> (events: [ServerSentEvent], closed: Bool, lines: Int) {
            var events = pending.withLock { early in
                defer { early.removeAll() }
                return early
            }
            let deadline = ContinuousClock.now + window
            while events.count < count, ContinuousClock.now < deadline {
                guard let bytes = connection.receiveSome(timeout: 20) else {
                    return (events, true, lines.withLock { $0 })
                }
                lines.withLock { $0 += bytes.filter { $0 == 0x0A }.count }
                events += try parser.withLock { try $0.feed(bytes) }
            }
            return (events, false, lines.withLock { $0 })
        }
    }

    @Test func launchDarklysStreamSendsAPutThenPatchesAndDeletesWithTheRevisionAsVersion() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let context = Base64URL.encode(Array(#"{"key":"u1","kind":"user"}"#.utf8))
        let client = try StreamClient(
            port: server.port, request: "GET /meval/\(context)?withReasons=true HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
        #expect(client.head.hasPrefix("HTTP/1.1 200 ") && client.head.lowercased().contains("text/event-stream"))
        let (opening, _, _) = try client.events(count: 1, within: TestTiming.scaled(.seconds(5)))
        let put = try #require(opening.first)
        #expect(put.type == "put")
        let flags = try #require(try FlagJSON.parse(Array(put.data.utf8)).objectValue)
        #expect(flags["kill_switch"]?.objectValue?["value"] == false)
        let firstVersion = try #require(flags["kill_switch"]?.objectValue?["version"]?.intValue)
        #expect(flags["kill_switch"]?.objectValue?["reason"] != nil, "withReasons=true")
        var changed = server.document
        changed.base.flags["kill_switch"] = FlagEntry(value: true)
        changed.base.flags["plan_priority_support"] = nil
        changed.rules.removeAll()
        server.document = changed
        let (events, _, _) = try client.events(within: TestTiming.scaled(.milliseconds(800)))
        let patches = events.filter { $0.type == "patch" }.compactMap { try? FlagJSON.parse(Array($0.data.utf8)).objectValue }
        let kill = try #require(patches.first { $0["key"] == "kill_switch" })
        #expect(kill["value"] == true && (kill["version"]?.intValue ?? 0) > firstVersion)
        #expect(!patches.contains { $0["key"] == "plan_displayName" }, "an unchanged flag gets no patch")
        let deletes = events.filter { $0.type == "delete" }.compactMap { try? FlagJSON.parse(Array($0.data.utf8)).objectValue }
        #expect(deletes.contains { $0["key"] == "plan_priority_support" && ($0["version"]?.intValue ?? 0) > firstVersion })
        // The REPORT form and a malformed context.
        let report = try StreamClient(
            port: server.port, request: "REPORT /meval HTTP/1.1\r\nHost: x\r\nContent-Length: 26\r\n\r\n{\"key\":\"u2\",\"kind\":\"user\"}")
        #expect(try report.events(count: 1, within: TestTiming.scaled(.seconds(5))).events.first?.type == "put")
        let bad = try #require(RawConnection(port: server.port))
        bad.send("GET /meval/%%% HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(bad.receive(timeout: 2_000).hasPrefix("HTTP/1.1 400 "))
    }

    @Test func aChangeRightAfterALaunchDarklyStreamOpensComesAsAPatchAfterThePut() async throws {
        // The head is sent once the stream counts as open; the put carries the document read
        // before that, so a change made the moment the head arrives is never folded into the
        // put unannounced — it follows as a patch. Twenty flips, each at the head.
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let context = Base64URL.encode(Array(#"{"key":"u1","kind":"user"}"#.utf8))
        for round in 0..<20 {
            let killed = round % 2 == 0
            let client = try StreamClient(
                port: server.port, request: "GET /meval/\(context) HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n")
            #expect(client.head.hasPrefix("HTTP/1.1 200 "))
            var changed = server.document
            changed.base.flags["kill_switch"] = FlagEntry(value: .bool(killed))
            server.document = changed
            let (events, _, _) = try client.events(count: 2, within: TestTiming.scaled(.seconds(5)))
            let values = events.map { event -> FlagValue? in
                let data = try? FlagJSON.parse(Array(event.data.utf8)).objectValue
                return event.type == "put" ? data?["kill_switch"]?.objectValue?["value"] : data?["value"]
            }
            #expect(events.map(\.type) == ["put", "patch"], "round \(round): \(events.map(\.type))")
            #expect(values == [.bool(!killed), .bool(killed)], "round \(round): the put holds the document before the change")
        }
    }

    @Test func everyDocumentChangeReachesEveryStream() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let clients = try (0..<3).map { _ in try StreamClient(port: server.port) }
        for client in clients {
            #expect(client.head.hasPrefix("HTTP/1.1 200 "))
            #expect(client.head.contains("Content-Type: text/event-stream"))
        }
        #expect(await eventually { server.streamCount == 3 })
        var changed = ServerDocument.seedExample
        changed.base.version = "2"
        // When the change was made, in whole seconds as the event says it (a starved test may
        // read the event long after).
        let changedFrom = Int(Date().timeIntervalSince1970)
        server.document = changed
        let changedBy = Int(Date().timeIntervalSince1970)
        for client in clients {
            let (events, closed, _) = try await blocking { try client.events(count: 1, within: TestTiming.scaled(.seconds(5))) }
            #expect(!closed)
            let event = try #require(events.first)
            #expect(event.type == "message")
            #expect(event.lastEventID == "1")
            let data = try FlagJSON.parse(Array(event.data.utf8))
            #expect(data.objectValue?["type"] == "refetchEvaluation")
            #expect(data.objectValue?["etag"] == "\"r1\"")
            #expect(data.objectValue?["lastModified"]?.intValue.map { (changedFrom...changedBy).contains($0) } == true, "\(data)")
        }
    }

    @Test func aReloadedFileIsAChange() async throws {
        let dir = TempDir()
        let file = dir.url("flags.json")
        try Data(ServerDocument.seedExample.jsonBytes()).write(to: file)
        let server = try FlagServer(file: file.path)
        defer { server.stop() }
        let client = try StreamClient(port: server.port)
        var changed = ServerDocument.seedExample
        changed.base.version = "reloaded"
        try Data(changed.jsonBytes()).write(to: file, options: .atomic)
        let (events, _, _) = try await blocking { try client.events(count: 1, within: TestTiming.scaled(.seconds(5))) }
        #expect(events.count == 1)
    }

    @Test func anIdleStreamSendsHeartbeats() async throws {
        let server = try FlagServer(document: .seedExample, configuration: .init(streamHeartbeat: .milliseconds(50)))
        defer { server.stop() }
        let client = try StreamClient(port: server.port)
        let (events, closed, lines) = try await blocking { try client.events(within: .milliseconds(600)) }
        #expect(events.isEmpty && !closed)
        // The opening comment and its blank line, then a comment and a blank line per heartbeat.
        #expect(lines >= 2 + 2 * 3, "\(lines) lines")
    }

    @Test func aClientResumingWithAnOlderIDGetsTheLatestChangeAtOnce() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        for version in ["a", "b", "c"] {
            var changed = ServerDocument.seedExample
            changed.base.version = version
            server.document = changed
        }
        let behind = try StreamClient(port: server.port, lastEventID: "1")
        let (events, _, _) = try await blocking { try behind.events(within: .milliseconds(300)) }
        #expect(events.map(\.lastEventID) == ["3"])
        let current = try StreamClient(port: server.port, lastEventID: "3")
        #expect(try await blocking { try current.events(within: .milliseconds(300)) }.events.isEmpty)
    }

    @Test func streamsDoNotTakeThePlacesOfRequests() async throws {
        let server = try FlagServer(
            document: .seedExample, configuration: .init(maxConnections: 2, evictionGrace: .seconds(600), maxStreams: 4))
        defer { server.stop() }
        let streams = try (0..<4).map { _ in try StreamClient(port: server.port) }
        #expect(await eventually { server.streamCount == 4 })
        let request = try #require(RawConnection(port: server.port))
        request.send("GET /flags?venue=v1 HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try await blocking { request.status() } == 200)
        // A fifth stream is over the limit.
        let fifth = try StreamClient(port: server.port)
        #expect(fifth.head.hasPrefix("HTTP/1.1 503 "))
        #expect(streams.count == 4)
    }

    @Test func aStreamEndsWhenItsClientLeavesAndWhenTheServerStops() async throws {
        let server = try FlagServer(document: .seedExample)
        var client: StreamClient? = try StreamClient(port: server.port)
        let other = try StreamClient(port: server.port)
        #expect(await eventually { server.streamCount == 2 })
        client = nil
        #expect(await eventually { server.streamCount == 1 })
        #expect(client == nil)
        let clock = ContinuousClock()
        let start = clock.now
        server.stop()
        #expect(clock.now - start < TestTiming.scaled(.seconds(2)))
        #expect(try await blocking { try other.events(within: TestTiming.scaled(.seconds(2))) }.closed)
    }

    @Test func faultDropAfterEvents() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        server.streamFault = .dropAfter(events: 2)
        let client = try StreamClient(port: server.port)
        #expect(await eventually { server.streamCount == 1 })
        for version in ["a", "b"] {
            var changed = ServerDocument.seedExample
            changed.base.version = version
            server.document = changed
            _ = try await blocking { try client.events(count: 1, within: TestTiming.scaled(.seconds(5))) }
        }
        #expect(try await blocking { try client.events(within: TestTiming.scaled(.seconds(5))) }.closed)
    }

    @Test func faultHalfOpenSendsNothingButKeepsTheConnection() async throws {
        let server = try FlagServer(document: .seedExample, configuration: .init(streamHeartbeat: .milliseconds(30)))
        defer { server.stop() }
        let client = try StreamClient(port: server.port)
        #expect(await eventually { server.streamCount == 1 })
        server.streamFault = .halfOpen
        _ = try await blocking { try client.events(within: TestTiming.scaled(.milliseconds(200))) }  // what was on its way
        let before = try await blocking { try client.events(within: .zero) }.lines
        var changed = ServerDocument.seedExample
        changed.base.version = "unseen"
        server.document = changed
        let wakeups = server.streamWakeups
        let started = ContinuousClock.now
        let (events, closed, lines) = try await blocking { try client.events(within: .milliseconds(400)) }
        let elapsed = ContinuousClock.now - started
        #expect(events.isEmpty && !closed && lines == before, "half-open: no event, no heartbeat, no close")
        // It wakes once per heartbeat period (30 ms) at most; spinning would be thousands.
        let allowed = Int(elapsed / .milliseconds(30)) + 10
        #expect(server.streamWakeups - wakeups < allowed, "a change held back does not make the stream spin")
        // Cleared, the stream delivers the change it held back.
        server.streamFault = nil
        #expect(try await blocking { try client.events(count: 1, within: TestTiming.scaled(.seconds(5))) }.events.count == 1)
    }

    @Test func faultSlowHeartbeat() async throws {
        // Configured heartbeats every 300 ms: a first one at the configured period would land
        // in the 400 ms looked at below.
        let server = try FlagServer(document: .seedExample, configuration: .init(streamHeartbeat: .milliseconds(300)))
        defer { server.stop() }
        // An hour apart: a test starved for the 30 s a shorter fault would give saw its first
        // heartbeat land in the window (ThreadSanitizer, two cores, another build running).
        server.streamFault = .slowHeartbeat(.seconds(3600))
        let client = try StreamClient(port: server.port)
        // The opening, however late a starved server sends it (one write: it comes whole).
        var before = 0
        for _ in 0..<50 where before == 0 {
            before = try await blocking { try client.events(within: TestTiming.scaled(.milliseconds(100))) }.lines
        }
        #expect(before > 0, "the opening never came")
        let after = try await blocking { try client.events(within: .milliseconds(400)) }.lines
        #expect(after == before, "no heartbeat within 400 ms when they are an hour apart — not even the first")
        #expect(FlagServer.StreamFault.slowHeartbeat(.seconds(30)).description == "heartbeat every 30000 ms")
    }

    @Test func onlyGET() throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let connection = try #require(RawConnection(port: server.port))
        connection.send("POST /events HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
        #expect(connection.status() == 405)
        #expect(server.requests.last?.route == "POST /events")
    }
}

extension [UInt8] {
    fileprivate var headEnd: Int? {
        guard count >= 4 else { return nil }
        for i in 0...(count - 4) where self[i] == 13 && self[i + 1] == 10 && self[i + 2] == 13 && self[i + 3] == 10 { return i + 4 }
        return nil
    }
    fileprivate var containsHeadEnd: Bool { headEnd != nil }
}
