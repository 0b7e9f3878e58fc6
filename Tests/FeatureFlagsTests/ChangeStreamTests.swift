import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TestSupport
@testable import FeatureFlags
import FlagServer
import FeatureFlagsTesting
import FeatureFlagsServices

/// The client side of change streams against FlagServer's `GET /events`, over loopback: every
/// fault the server can rehearse, and the stream's own limits.
@Suite("Change streams")
struct ChangeStreamTests {
    /// A stream and what it signalled.
    final class Recorder: Sendable {
        let signals = Locked<[ChangeStream.Signal]>([])
        var all: [ChangeStream.Signal] { signals.withLock { $0 } }
        var opens: Int { all.filter { $0 == .opened }.count }
        var refetches: [ChangeStream.Signal] { all.filter { if case .refetch = $0 { return true } else { return false } } }
        var closes: [(reason: String, retryIn: Duration?)] {
            all.compactMap { if case .closed(let reason, let retryIn, _, _) = $0 { return (reason, retryIn) } else { return nil } }
        }
        func stream(_ url: URL, heartbeatDeadline: Duration = .seconds(30), clock: TestClock? = nil) -> ChangeStream {
            var configuration = ChangeStream.Configuration(
                heartbeatDeadline: heartbeatDeadline, backoff: Backoff(initial: .milliseconds(20), maximum: .milliseconds(100)))
            if let clock { configuration.clock = makeElapsedClock(clock) }
            return ChangeStream(url: url, configuration: configuration) { [signals] signal in signals.withLock { $0.append(signal) } }
        }
    }

    static func change(_ server: FlagServer, to version: String) {
        var changed = ServerDocument.seedExample
        changed.base.version = version
        server.document = changed
    }

    static func events(_ server: FlagServer) -> URL { server.baseURL.appendingPathComponent("events") }

    @Test func opensAndTurnsEveryChangeIntoARefetch() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let recorder = Recorder()
        let stream = recorder.stream(Self.events(server))
        defer { stream.shutdown() }
        stream.start()
        #expect(await eventually { recorder.opens == 1 && server.streamCount == 1 })
        Self.change(server, to: "2")
        #expect(await eventually { recorder.refetches.count == 1 })
        guard case .refetch(let etag, let lastModified)? = recorder.refetches.first else { return }
        #expect(etag == "\"r1\"")
        #expect(lastModified.flatMap(Int.init).map { abs($0 - Int(Date().timeIntervalSince1970)) < 60 } == true)
        Self.change(server, to: "3")
        #expect(await eventually { recorder.refetches.count == 2 })
        #expect(recorder.closes.isEmpty)
        #expect(server.requests.first?.headers["accept"] == "text/event-stream")
    }

    @Test func aDroppedStreamReconnectsResumesAndSaysOpenedAgain() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        server.streamFault = .dropAfter(events: 1)
        let recorder = Recorder()
        let stream = recorder.stream(Self.events(server))
        defer { stream.shutdown() }
        stream.start()
        #expect(await eventually { server.streamCount == 1 })
        Self.change(server, to: "2")
        #expect(await eventually { recorder.refetches.count == 1 && recorder.opens == 2 })
        #expect(recorder.closes.first?.retryIn != nil)
        // The reconnection says which event it saw last.
        #expect(server.requests.last?.headers["last-event-id"] == "1")
    }

    @Test func aHalfOpenStreamIsNoticedByItsHeartbeatDeadline() async throws {
        let server = try FlagServer(document: .seedExample, configuration: .init(streamHeartbeat: .milliseconds(20)))
        defer { server.stop() }
        let recorder = Recorder()
        // The deadline runs on a test clock: 45 s pass when the test says so. Heartbeats come in
        // real time, every 20 ms.
        let clock = TestClock()
        let deadline = Duration.seconds(45)
        let stream = recorder.stream(Self.events(server), heartbeatDeadline: deadline, clock: clock)
        defer { stream.shutdown() }
        stream.start()
        #expect(await eventually { recorder.opens == 1 })
        // Heartbeats keep a quiet stream alive: twice the deadline passes, 30 s at a time, and a
        // heartbeat is heard after each step.
        for _ in 0..<3 {
            clock.advance(by: .seconds(30))
            let now = clock.now.offset
            #expect(await eventually { stream.lastActivity >= now }, "a heartbeat after +\(now)")
        }
        #expect(recorder.closes.isEmpty, "\(recorder.closes)")
        // Half-open: nothing comes any more, and the deadline closes the connection. A heartbeat
        // already on its way restarts the deadline once: step past it again until it closes.
        server.streamFault = .halfOpen
        #expect(await Self.closesPastItsDeadline(stream, clock, deadline, recorder), "\(recorder.all)")
        // The reconnection waits out its backoff (at most 100 ms) on the same clock.
        clock.advance(by: .milliseconds(100))
        #expect(await eventually { recorder.opens >= 2 }, "reconnected")
        // Healthy again, the reopened stream carries changes (the clock stands still: no
        // deadline passes meanwhile).
        server.streamFault = nil
        let before = recorder.refetches.count
        Self.change(server, to: "2")
        #expect(await eventually { recorder.refetches.count > before })
    }

    @Test func heartbeatsTooRareAreAHalfOpenStreamToo() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        // Far rarer than the deadline, in real time too: a heartbeat that a stalled machine let
        // arrive after the clock moved would restart the deadline the test waits for.
        server.streamFault = .slowHeartbeat(.seconds(3_600))
        let recorder = Recorder()
        // The deadline on a test clock: 45 s pass when the test says so, not in wall time.
        let clock = TestClock()
        let stream = recorder.stream(Self.events(server), heartbeatDeadline: .seconds(45), clock: clock)
        defer { stream.shutdown() }
        stream.start()
        #expect(await eventually { recorder.opens == 1 })
        await clock.sleepers(atLeast: 1)
        #expect(recorder.closes.isEmpty)
        // The stream's first bytes (which restart the deadline, as any byte does) may reach it
        // after the clock moved on a loaded machine.
        #expect(await Self.closesPastItsDeadline(stream, clock, .seconds(45), recorder), "\(recorder.all)")
    }

    /// Steps the clock past the deadline until the stream closes as half-open. A byte that
    /// reaches the stream after a step (a heartbeat already on its way, the stream's first
    /// bytes on a loaded machine) restarts the deadline, as any byte does: then it steps again.
    /// Each step waits for the close or for such a byte, never for a fixed time.
    static func closesPastItsDeadline(_ stream: ChangeStream, _ clock: TestClock, _ deadline: Duration, _ recorder: Recorder) async -> Bool {
        let closed = { recorder.closes.contains { $0.reason.contains("half-open") } }
        for _ in 0..<10 {
            clock.advance(by: deadline + .seconds(1))
            let now = clock.now.offset
            guard await eventually(within: TestTiming.loopbackBudget, { closed() || stream.lastActivity >= now }) else { return false }
            if closed() { return true }
        }
        return false
    }

    @Test func aServerRestartIsSurvived() async throws {
        var server = try FlagServer(document: .seedExample)
        let recorder = Recorder()
        let stream = recorder.stream(Self.events(server))
        stream.start()
        #expect(await eventually { recorder.opens == 1 })
        // The port is held from the server's stop to its restart.
        var hold = server.stopHoldingPort()
        let port = server.port
        defer { stream.shutdown() }
        #expect(hold?.port == port)
        #expect(await eventually { recorder.closes.count >= 2 }, "the end, then refused reconnections")
        server = try FlagServer(document: .seedExample, returningTo: try #require(hold))
        defer { server.stop() }
        hold = nil
        _ = hold
        #expect(await eventually { recorder.opens == 2 })
    }

    @Test func stopEndsTheStreamAndEveryReconnection() async throws {
        let (server, recorder, clock, stream) = try Self.droppingAfterOneEvent()
        defer {
            stream.shutdown()
            server.stop()
        }
        // Stopped while connected: the connection ends and its heartbeat watchdog with it.
        stream.start()
        #expect(await eventually { server.streamCount == 1 && recorder.opens == 1 })
        stream.stop()
        #expect(await eventually { server.streamCount == 0 && clock.sleeperCount == 0 })
        // Stopped while waiting to reconnect: the server ends the stream after one change, and
        // the stream waits on the clock to connect again.
        stream.start()
        #expect(await Self.waitsToReconnect(server, recorder, clock, opens: 2))
        let requests = server.requestCount
        let signals = recorder.all.count
        stream.stop()
        #expect(await eventually { clock.sleeperCount == 0 }, "the wait is cancelled")
        // Whatever time passes, nothing more: no request, no signal.
        clock.advance(by: .seconds(3_600))
        stream.settle()
        #expect(server.requestCount == requests)
        #expect(recorder.all.count == signals, "\(recorder.all)")
        #expect(!stream.isRunning)
    }

    @Test func aReconnectionWaitsOutItsBackoffOnTheStreamsClock() async throws {
        let (server, recorder, clock, stream) = try Self.droppingAfterOneEvent()
        defer {
            stream.shutdown()
            server.stop()
        }
        stream.start()
        #expect(await Self.waitsToReconnect(server, recorder, clock, opens: 1))
        let retryIn = try #require(recorder.closes.first?.retryIn)
        #expect(retryIn <= .milliseconds(100), "full jitter under the backoff's ceiling")
        // Until the clock reaches the wait's end, no connection: the wait is the only sleeper.
        let requests = server.requestCount
        stream.settle()
        #expect(server.requestCount == requests)
        #expect(clock.sleeperDeadlines == [TestClock.Instant(offset: retryIn)])
        clock.advance(by: retryIn)
        #expect(await eventually { recorder.opens == 2 && server.streamCount == 1 }, "\(recorder.all)")
    }

    /// A server that ends each stream after one change event, and a stream to it (not started)
    /// whose deadline and reconnections run on a test clock: a pending reconnection is a
    /// sleeper the test can see.
    static func droppingAfterOneEvent() throws -> (FlagServer, Recorder, TestClock, ChangeStream) {
        let server = try FlagServer(document: .seedExample)
        server.streamFault = .dropAfter(events: 1)
        let recorder = Recorder()
        let clock = TestClock()
        return (server, recorder, clock, recorder.stream(events(server), clock: clock))
    }

    /// Once the stream is open for the `opens`th time: a change makes the server end it, and the
    /// stream then waits on the clock — its only sleeper — to connect again.
    static func waitsToReconnect(_ server: FlagServer, _ recorder: Recorder, _ clock: TestClock, opens: Int) async -> Bool {
        guard await eventually({ server.streamCount == 1 && recorder.opens == opens }) else { return false }
        change(server, to: "v\(opens + 1)")
        return await eventually { recorder.closes.count == 1 && clock.sleeperCount == 1 }
    }

    @Test func anAnswerThatIsNotAStreamIsRetriedWithBackoff() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let recorder = Recorder()
        for (path, reason) in [("nowhere", "HTTP 404"), ("flags", "not an event stream")] {
            let stream = recorder.stream(server.baseURL.appendingPathComponent(path))
            stream.start()
            #expect(await eventually { recorder.closes.filter { $0.reason.contains(reason) }.count >= 2 }, "\(path)")
            #expect(recorder.closes.allSatisfy { $0.retryIn.map { $0 <= .milliseconds(100) } ?? false })
            stream.shutdown()
        }
        #expect(recorder.opens == 0)
    }

    /// The answer's media type is read as a MIME type: its essence, in any case, with any
    /// parameters — and no other type that merely begins with the same letters.
    @Test func aStreamIsKnownByItsMediaTypesEssence() async throws {
        let standIn = try LaunchDarklyStandIn(flags: "{}")
        defer { standIn.stop() }
        for (type, opens) in [
            ("text/event-stream; charset=utf-8", true), ("Text/Event-Stream", true), ("text/event-stream ;x=y", true),
            ("text/event-streams", false), ("text/event-stream-v2", false), ("text/event-streamx; charset=utf-8", false),
        ] {
            standIn.setStreamContentType(type)
            let recorder = Recorder()
            let stream = recorder.stream(standIn.baseURL.appendingPathComponent("meval/e30"))
            stream.start()
            // The stand-in keeps every answer open: a refused one must end without its help.
            if opens {
                #expect(await eventually { recorder.opens == 1 }, "\(type)")
            } else {
                #expect(await eventually { recorder.closes.contains { $0.reason.contains("not an event stream") } }, "\(type): \(recorder.all)")
                #expect(recorder.opens == 0, "\(type)")
            }
            stream.shutdown()
            standIn.dropStreams()
        }
    }

    @Test func plainHTTPOffLoopbackIsRefusedBeforeConnecting() async throws {
        let recorder = Recorder()
        let stream = recorder.stream(URL(string: "http://flags.example.com/events?token=secret")!)
        defer { stream.shutdown() }
        stream.start()
        #expect(await eventually { recorder.closes.count == 1 })
        #expect(recorder.closes.first?.retryIn == nil)
        #expect(recorder.closes.first?.reason.contains("secret") == false)
        #expect(!stream.isRunning)
    }

    @Test func aFieldURLSessionWouldDropStopsTheStreamBeforeConnecting() async throws {
        let standIn = try LaunchDarklyStandIn(flags: "{}")
        defer { standIn.stop() }
        let streamOwn = { (fields: [String: String]) in
            StreamConnection(method: "GET", headers: fields, body: nil, events: .launchDarkly, heartbeatDeadline: nil)
        }
        let cases: [(fields: [String: String], connection: StreamConnection?, fault: String)] = [
            (["Authorization": "s3cret\n"], nil, "its value"), (["Bad Name": "1"], nil, "its name"),
            // The endpoint's own stream headers (LaunchDarkly's key) are held to the same rule.
            ([:], streamOwn(["Authorization": "s3cret\r\n"]), "its value"),
        ]
        for (fields, connection, fault) in cases {
            let recorder = Recorder()
            var configuration = ChangeStream.Configuration(backoff: Backoff(initial: .milliseconds(20), maximum: .milliseconds(100)))
            configuration.headers = fields
            configuration.connection = connection
            let stream = ChangeStream(url: standIn.baseURL.appendingPathComponent("meval/e30"), configuration: configuration) {
                [signals = recorder.signals] signal in signals.withLock { $0.append(signal) }
            }
            defer { stream.shutdown() }
            stream.start()
            #expect(await eventually { recorder.closes.count == 1 })
            let reason = recorder.closes.first?.reason ?? ""
            #expect(reason.contains("header field") && reason.contains(fault), "\(reason)")
            #expect(!reason.contains("s3cret"), "the value may be a secret")
            #expect(recorder.closes.first?.retryIn == nil, "the same fields would be dropped again")
            #expect(!stream.isRunning)
        }
        #expect(standIn.requests.isEmpty, "nothing was sent without the field")
    }

    /// A stream to a LaunchDarkly stand-in, once it is open: `body` acts on both, then both stop.
    static func withOpenStream(_ body: (LaunchDarklyStandIn, Recorder) async throws -> Void) async throws {
        let standIn = try LaunchDarklyStandIn(flags: "{}")
        defer { standIn.stop() }
        let recorder = Recorder()
        let stream = recorder.stream(standIn.baseURL.appendingPathComponent("meval/e30"))
        defer { stream.shutdown() }
        stream.start()
        #expect(await eventually { standIn.streamCount == 1 && recorder.opens == 1 })
        try await body(standIn, recorder)
    }

    @Test func anIDThatCannotBeAFieldValueIsNotSentBack() async throws {
        try await Self.withOpenStream { standIn, recorder in
            standIn.sendRaw("id: 7\u{1B}[2J\ndata: {\"type\": \"refetchEvaluation\"}\n\n")
            #expect(await eventually { recorder.refetches.count == 1 }, "the event arrived")
            standIn.dropStreams()
            #expect(await eventually { standIn.streamCount == 1 && recorder.opens == 2 })
            #expect(standIn.requests.count == 2)
            #expect(standIn.requests.last?.lastEventID == nil, "an escape sequence is no field value: the reconnection goes without it")
            standIn.sendRaw("id: 8\ndata: {\"type\": \"refetchEvaluation\"}\n\n")
            #expect(await eventually { recorder.refetches.count == 2 })
            standIn.dropStreams()
            #expect(await eventually { standIn.requests.count == 3 })
            #expect(standIn.requests.last?.lastEventID == "8", "a plain id is sent back")
        }
    }

    @Test func anIDOfAnEventCutOffIsNeverSentBack() async throws {
        // A connection that ends inside an event (its `id:` line arrived, its empty line did
        // not) never delivered that event: neither this reconnection nor a later one may
        // name it, or the service would take the event as delivered and skip it.
        try await Self.withOpenStream { standIn, recorder in
            standIn.sendRaw("id: 7\ndata: {\"type\": \"refetchEvaluation\"}\n\nid: 8\ndata: {\"type\": \"refetch")
            #expect(await eventually { recorder.refetches.count == 1 })
            standIn.dropStreams()
            #expect(await eventually { standIn.streamCount == 1 && recorder.opens == 2 })
            #expect(standIn.requests.last?.lastEventID == "7")
            // An event without an id on the new connection keeps 7.
            standIn.sendRaw("data: {\"type\": \"refetchEvaluation\"}\n\n")
            #expect(await eventually { recorder.refetches.count == 2 })
            standIn.dropStreams()
            #expect(await eventually { standIn.requests.count == 3 })
            #expect(standIn.requests.last?.lastEventID == "7", "not the 8 of the event cut off")
        }
    }

    @Test(arguments: [("5000", Duration.seconds(5)), ("99999999999999999999", .seconds(3_600))])
    func aReconnectionWaitsAtLeastTheReconnectionTimeTheStreamAskedFor(retry: String, least: Duration) async throws {
        // WHATWG: wait the reconnection time (`retry:`, here at most an hour), then optionally
        // more. The backoff's jitter (here at most 100 ms) comes on top; it never shortens the
        // server's wait.
        try await Self.withOpenStream { standIn, recorder in
            // An event after the field proves it arrived before the connection ends.
            standIn.sendRaw("retry: \(retry)\ndata: {\"type\": \"refetchEvaluation\"}\n\n")
            #expect(await eventually { recorder.refetches.count == 1 })
            standIn.dropStreams()
            #expect(await eventually { recorder.closes.count == 1 })
            let retryIn = try #require(recorder.closes.first?.retryIn)
            #expect(retryIn >= least && retryIn <= least + .milliseconds(100), "\(retryIn)")
        }
    }

    @Test func a204StopsTheStreamForGood() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        server.fault = .status(204, retryAfter: nil)
        let recorder = Recorder()
        let clock = TestClock()
        let stream = recorder.stream(server.baseURL.appendingPathComponent("flags"), clock: clock)
        defer { stream.shutdown() }
        stream.start()
        #expect(await eventually { !recorder.closes.isEmpty })
        #expect(recorder.closes.first?.retryIn == nil)
        #expect(recorder.closes.first?.reason.contains("204") == true)
        #expect(!stream.isRunning)
        // No reconnection waits on the clock, and none follows however long the test waits.
        #expect(await eventually { clock.sleeperCount == 0 })
        let requests = server.requestCount
        clock.advance(by: .seconds(3_600))
        stream.settle()
        #expect(server.requestCount == requests)
    }

    @Test func aRedirectIsFollowedOnlyWhereTheHTTPSRuleAllows() async throws {
        let recorder = Recorder()
        let stream = recorder.stream(URL(string: "http://127.0.0.1:9/events")!)
        defer { stream.shutdown() }
        let task = URLSession(configuration: .ephemeral).dataTask(with: URL(string: "http://127.0.0.1:9/events")!)
        let decisions = Locked<[URLRequest?]>([])
        for target in ["http://flags.example.com/events?token=secret", "https://flags.example.com/events", "http://127.0.0.1:10/events"] {
            stream.session(redirecting: task, to: URLRequest(url: URL(string: target)!)) { request in decisions.withLock { $0.append(request) } }
        }
        #expect(decisions.withLock { $0.map { $0?.url?.host } } == [nil, "flags.example.com", "127.0.0.1"])
        // Followed to another origin, without the credentials; within the origin, with them.
        decisions.withLock { $0.removeAll() }
        for target in ["https://flags.example.com/events", "http://127.0.0.1:9/events?page=2"] {
            var redirect = URLRequest(url: URL(string: target)!)
            redirect.setValue("Bearer s3cret", forHTTPHeaderField: "Authorization")
            redirect.setValue("text/event-stream", forHTTPHeaderField: "Accept")
            stream.session(redirecting: task, to: redirect) { request in decisions.withLock { $0.append(request) } }
        }
        let sent = decisions.withLock { $0 }
        #expect(sent.map { $0?.value(forHTTPHeaderField: "Authorization") } == [nil, "Bearer s3cret"])
        #expect(sent.map { $0?.value(forHTTPHeaderField: "Accept") } == ["text/event-stream", "text/event-stream"])
    }

    @Test func onlyRefetchEvaluationMessagesAsk() {
        func signal(_ data: String) -> ChangeStream.Signal? { ChangeStream.refetch(in: ServerSentEvent(data: data)) }
        #expect(signal(#"{"type":"refetchEvaluation"}"#) == .refetch(etag: nil, lastModified: nil))
        #expect(signal(#"{"type":"refetchEvaluation","etag":"\"a\"","lastModified":1771622898}"#) == .refetch(etag: "\"a\"", lastModified: "1771622898"))
        #expect(signal(#"{"type":"refetchEvaluation","lastModified":"2026-02-20T21:28:18Z"}"#) == .refetch(etag: nil, lastModified: "2026-02-20T21:28:18Z"))
        #expect(signal(#"{"type":"somethingNew"}"#) == nil)
        // The data's type decides, not the SSE event name.
        #expect(ChangeStream.refetch(in: ServerSentEvent(type: "refetch", data: #"{"type":"refetchEvaluation"}"#)) != nil)
        #expect(signal("not json") == nil)
        #expect(signal("[1]") == nil)
    }
}
