import FeatureFlags
import Foundation

/// `GET /events`: a change stream of server-sent events, the shape OpenFeature's OFREP event
/// streams use. Every document change (a `document` set, a reloaded file) sends
///
///     id: <revision>
///     event: message
///     data: {"type":"refetchEvaluation","etag":"\"r<revision>\"","lastModified":<Unix seconds>}
///
/// to every open stream; a comment goes out every ``Configuration/streamHeartbeat`` while
/// nothing changes. A client that reconnects with a `Last-Event-ID` older than the current
/// revision gets the current change at once (missed changes collapse into the latest: every
/// one of them asks for the same refetch).
extension FlagServer {
    func streamChanges(_ request: HTTPRequest, responder: Responder, connection: Connection) -> Responder.Outcome {
        runStream(request, responder: responder, connection: connection, opening: { _, _ in ": change stream open\n\n" }) { snapshot in
            Self.changeEvent(revision: snapshot.revision, changedAt: snapshot.changedAt)
        }
    }

    /// LaunchDarkly's mobile stream for `context`: at once a `put` with every flag evaluated
    /// for it; after each document change, a `patch` for every flag whose object changed and a
    /// `delete` for every flag gone (the document's revision is the environment version they
    /// carry), nothing when the change does not touch this context; heartbeat comments between.
    func streamLaunchDarkly(
        _ request: HTTPRequest, context: EvaluationContext, reasons: Bool, responder: Responder, connection: Connection
    ) -> Responder.Outcome {
        let sent = Locked<[String: FlagValue]>([:])
        let evaluate = { (document: ServerDocument, revision: Int) -> [String: FlagValue] in
            WireFormat.launchDarklyFlags(document.evaluate(for: context), reasons: reasons, version: revision)
        }
        return runStream(request, responder: responder, connection: connection, opening: { document, revision in
            let flags = evaluate(document, revision)
            sent.withLock { $0 = flags }
            return ": launchdarkly stream open\n\n" + Self.event("put", .object(flags))
        }) { snapshot in
            let now = evaluate(self.document, snapshot.revision)
            let before = sent.withLock { old in
                defer { old = now }
                return old
            }
            var text = ""
            for key in now.keys.sorted() where Self.withoutVersion(now[key]) != Self.withoutVersion(before[key]) {
                guard case .object(var flag)? = now[key] else { continue }
                flag["key"] = .string(key)
                text += Self.event("patch", .object(flag))
            }
            for key in before.keys.sorted() where now[key] == nil {
                text += Self.event("delete", ["key": .string(key), "version": .int(snapshot.revision)])
            }
            return text.isEmpty ? nil : text
        }
    }

    /// The answer to a stream request beyond `limit` open streams (503).
    static func streamsFull(_ limit: Int) -> [String: FlagValue] { ["error": .string("too many change streams (\(limit))")] }

    /// A LaunchDarkly event: `event: NAME` and its JSON data on one line.
    static func event(_ name: String, _ data: FlagValue) -> String {
        "event: \(name)\ndata: \(FlagJSON.string(data, sortedKeys: true))\n\n"
    }

    /// A flag object without its version (which every document change raises).
    private static func withoutVersion(_ flag: FlagValue?) -> FlagValue? {
        guard case .object(var item)? = flag else { return flag }
        item["version"] = nil
        return .object(item)
    }

    /// One open stream: `opening` (given the document and its revision) first, then what
    /// `onChange` makes of each newer revision (nil: nothing for this stream), heartbeat
    /// comments while idle, the stream faults applied, until the client leaves or the server stops.
    private func runStream(
        _ request: HTTPRequest, responder: Responder, connection: Connection, opening: (ServerDocument, Int) -> String,
        onChange: (ChangeSignal.Snapshot) -> String?
    ) -> Responder.Outcome {
        // The document and its revision are read together, before the stream counts as open: a
        // change made once `streamCount` includes this stream always reaches it as a change,
        // never folded unannounced into the opening.
        let (document, revision) = state.withLock { ($0.document, $0.revision) }
        var snapshot = changes.current
        let admitted = state.withLock { $0.connections.startStream(connection.fd, limit: configuration.maxStreams) }
        guard admitted else {
            return responder.json(status: 503, Self.streamsFull(configuration.maxStreams))
        }
        guard responder.streamHead() else { return Responder.Outcome(status: 200, bytes: 0, keepOpen: false) }
        var bytes = 0
        func send(_ text: String) -> Bool {
            let chunk = Array(text.utf8)
            guard connection.send(chunk) else { return false }
            bytes += chunk.count
            return true
        }
        var seen = revision
        if let last = request.headers["last-event-id"].flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }), last < seen {
            seen = last
        }
        guard send(opening(document, revision)) else { return Responder.Outcome(status: 200, bytes: bytes, keepOpen: false) }
        var sentEvents = 0
        // The heartbeat period under `fault`: a slow-heartbeat fault's, else the configured one.
        func period(_ fault: StreamFault?) -> Duration {
            if case .slowHeartbeat(let slow) = fault { return max(slow, .milliseconds(10)) }
            return configuration.streamHeartbeat
        }
        // The first heartbeat too keeps a slow-heartbeat fault's period (it came after the
        // configured one, however slow the fault said heartbeats were).
        var nextHeartbeat = ContinuousClock.now + period(state.withLock { $0.streamFault })
        while true {
            let fault = state.withLock { s in
                s.streamWakeups += 1
                return s.streamFault
            }
            let heartbeat = period(fault)
            // Wake for a change, a fault being set, the stop, the heartbeat, or once a second to
            // notice a client that went away.
            let untilHeartbeat = ContinuousClock.now.duration(to: nextHeartbeat)
            let wait = min(max(untilHeartbeat, .zero), .seconds(1))
            // Half-open, a change not sent yet must not end every wait at once (that would spin):
            // wait for the next one instead; the pending change goes out when the fault clears.
            let after = fault == .halfOpen ? snapshot.revision : seen
            snapshot = changes.wait(after: after, nudge: snapshot.nudges, until: Date().addingTimeInterval(wait.seconds))
            if snapshot.stopped || Socket.peerClosed(connection.fd) { break }
            // The fault as it is now: one set while waiting applies to what the wait woke for.
            let current = state.withLock { $0.streamFault }
            if current == .halfOpen {
                // Send nothing at all; keep the connection.
                nextHeartbeat = ContinuousClock.now + heartbeat
                continue
            }
            // Newer than what was sent (the announcement may trail the state it announces).
            if snapshot.revision > seen {
                seen = snapshot.revision
                guard let text = onChange(snapshot) else { continue }
                guard send(text) else { break }
                sentEvents += 1
                nextHeartbeat = ContinuousClock.now + heartbeat
                if case .dropAfter(let limit) = current, sentEvents >= limit { break }
            } else if ContinuousClock.now >= nextHeartbeat {
                guard send(": heartbeat\n\n") else { break }
                nextHeartbeat = ContinuousClock.now + heartbeat
            }
        }
        return Responder.Outcome(status: 200, bytes: bytes, keepOpen: false)
    }

    /// The event that asks clients to fetch again, OFREP's `refetchEvaluation`.
    static func changeEvent(revision: Int, changedAt: Date) -> String {
        let data = FlagJSON.string(
            .object([
                "type": .string("refetchEvaluation"), "etag": .string("\"r\(revision)\""),
                "lastModified": .int(Int(changedAt.timeIntervalSince1970)),
            ]), sortedKeys: true)
        return "id: \(revision)\nevent: message\ndata: \(data)\n\n"
    }
}
