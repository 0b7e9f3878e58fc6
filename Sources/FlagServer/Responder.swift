import Foundation
import FeatureFlags
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes answers — proper ones and every rehearsed fault — to one connection.
struct Responder {
    struct Outcome {
        /// The status sent, nil when no status line went out.
        let status: Int?
        let bytes: Int
        let keepOpen: Bool
    }

    let connection: Connection
    /// Whether the connection closes after this answer: every head then says `Connection: close`.
    let closing: Bool
    /// An HTTP/1.0 connection kept open: every head says `Connection: keep-alive`.
    var confirmsKeepAlive = false
    /// A `HEAD` request: the head a `GET` would get, and no content (RFC 9110 §9.3.2).
    var headOnly = false
    /// Called with the status and planned body size just before the status line goes out,
    /// so the request log is up to date by the time the client reads the answer.
    let announce: (_ status: Int, _ bodyBytes: Int, _ headBytes: Int) -> Void

    /// Announces, then writes the head and whatever part of the body is given; false if the
    /// peer went away. `bodyBytes` is the whole body's planned size.
    private func send(status: Int, head: [UInt8], body: ArraySlice<UInt8> = [], bodyBytes: Int) -> Bool {
        if headOnly {
            announce(status, 0, head.count)
            return connection.send(head)
        }
        announce(status, bodyBytes, head.count)
        // One write for small answers (no Nagle delay between head and body); a large body
        // goes out from the cached array as it is, never copied behind its head.
        if body.count <= 64 << 10 { return connection.send(head + body) }
        return connection.send(head) && connection.send(body)
    }

    /// A response head, with `Connection: close` when the connection closes after it (and
    /// `Connection: keep-alive` when an HTTP/1.0 connection does not), unless `headers` name
    /// the connection's fate themselves (an answer whose body ends with the connection).
    private func head(status: Int, headers: [(String, String)]) -> [UInt8] {
        if headers.contains(where: { $0.0 == "Connection" }) { return HTTPResponse.head(status: status, headers: headers) }
        let connection: [(String, String)] = closing ? [("Connection", "close")] : confirmsKeepAlive ? [("Connection", "keep-alive")] : []
        return HTTPResponse.head(status: status, headers: headers + connection)
    }

    /// The strong entity tag of a body.
    static func etag(_ body: [UInt8]) -> String { "\"" + SHA256.hex(body).prefix(32) + "\"" }

    /// Whether an `If-None-Match` value matches `etag` (weak comparison, `*`, lists).
    static func matches(_ ifNoneMatch: String?, _ etag: String) -> Bool {
        guard let ifNoneMatch else { return false }
        let strip = { (tag: Substring) -> Substring in
            let t = tag.trimmingCharacters(in: .whitespaces)
            return Substring(t.hasPrefix("W/") ? String(t.dropFirst(2)) : t)
        }
        return ifNoneMatch.split(separator: ",").contains { strip($0) == "*" || strip($0) == strip(Substring(etag)) }
    }

    /// An error answer in `format`'s own error shape.
    func error(status: Int, message: String, format: WireFormat, extra: [(String, String)] = []) -> Outcome {
        json(status: status, format.errorBody(status: status, message: message).objectValue ?? [:], extra: extra)
    }

    func json(status: Int, _ members: [String: FlagValue], extra: [(String, String)] = []) -> Outcome {
        let body = FlagJSON.bytes(.object(members))
        let head = head(
            status: status, headers: [("Content-Type", "application/json"), ("Content-Length", "\(body.count)")] + extra)
        let sent = send(status: status, head: head, body: body[...], bodyBytes: body.count)
        return Outcome(status: status, bytes: sent && !headOnly ? body.count : 0, keepOpen: sent)
    }

    /// An answer without content (`Content-Length: 0`, RFC 9110 §9.3.7 for `OPTIONS`).
    func empty(status: Int, extra: [(String, String)] = []) -> Outcome {
        let head = head(status: status, headers: [("Content-Length", "0")] + extra)
        return Outcome(status: status, bytes: 0, keepOpen: send(status: status, head: head, bodyBytes: 0))
    }

    /// The head of a change stream: its body is server-sent events until the connection closes.
    func streamHead() -> Bool {
        let head = HTTPResponse.head(
            status: 200,
            headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"), ("Connection", "close")])
        return send(status: 200, head: head, bodyBytes: 0)
    }

    func document(body: [UInt8], etag tag: String, ifNoneMatch: String?) -> Outcome {
        if Self.matches(ifNoneMatch, tag) {
            // RFC 9110 §15.4.5: the 200's ETag and Cache-Control again; no Content-Length, which
            // could only be the 200's length (§8.6) and which a 304 never frames anyway.
            let sent = send(
                status: 304, head: head(status: 304, headers: [("ETag", tag), ("Cache-Control", "no-cache")]), bodyBytes: 0)
            return Outcome(status: 304, bytes: 0, keepOpen: sent)
        }
        let head = head(
            status: 200,
            headers: [
                ("Content-Type", "application/json"), ("Content-Length", "\(body.count)"), ("ETag", tag),
                ("Cache-Control", "no-cache"),
            ])
        let sent = send(status: 200, head: head, body: body[...], bodyBytes: body.count)
        return Outcome(status: 200, bytes: sent && !headOnly ? body.count : 0, keepOpen: sent)
    }

    func apply(_ fault: FlagServer.Fault, document: FlagDocument) -> Outcome {
        switch fault {
        case .resetReusedConnections:
            // Decided per connection by the server loop, which resets before a reused request.
            Socket.resetOnClose(connection.fd)
            return Outcome(status: nil, bytes: 0, keepOpen: false)
        case .hangBeforeHeaders:
            Socket.holdUntilClosed(connection.fd, stopFD: connection.stopFD)
            return Outcome(status: nil, bytes: 0, keepOpen: false)
        case .closeConnection:
            return Outcome(status: nil, bytes: 0, keepOpen: false)
        case .status(let status, let retryAfter):
            let extra = retryAfter.map { [("Retry-After", $0)] } ?? []
            return json(status: status, ["error": .string("injected status \(status)")], extra: extra)
        case .redirect(let status, let location):
            return empty(status: status, extra: [("Location", location)])
        case .body(let body):
            let head = head(
                status: 200, headers: [("Content-Type", "application/json"), ("Content-Length", "\(body.count)")])
            let sent = send(status: 200, head: head, body: body[...], bodyBytes: body.count)
            return Outcome(status: 200, bytes: sent && !headOnly ? body.count : 0, keepOpen: sent)
        case .garbageBody:
            let body = Array("<html>this is not a flag document".utf8)
            let head = head(
                status: 200, headers: [("Content-Type", "application/json"), ("Content-Length", "\(body.count)")])
            let sent = send(status: 200, head: head, body: body[...], bodyBytes: body.count)
            return Outcome(status: 200, bytes: sent && !headOnly ? body.count : 0, keepOpen: sent)
        case .stallMidBody:
            let body = document.jsonBytes()
            let half = Array(body[0..<(body.count / 2)])
            let head = head(
                status: 200, headers: [("Content-Type", "application/json"), ("Content-Length", "\(body.count)")])
            guard send(status: 200, head: head, body: half[...], bodyBytes: half.count) else { return Outcome(status: 200, bytes: 0, keepOpen: false) }
            Socket.holdUntilClosed(connection.fd, stopFD: connection.stopFD)
            return Outcome(status: 200, bytes: half.count, keepOpen: false)
        case .oversizedBody(let size):
            let head = head(
                status: 200, headers: [("Content-Type", "application/json"), ("Content-Length", "\(size)")])
            guard send(status: 200, head: head, bodyBytes: size) else { return Outcome(status: 200, bytes: 0, keepOpen: false) }
            let sent = sendFiller(size) { connection.send($0) }
            return Outcome(status: 200, bytes: sent, keepOpen: sent == size)
        case .oversizedChunkedBody(let size):
            let head = head(
                status: 200, headers: [("Content-Type", "application/json"), ("Transfer-Encoding", "chunked")])
            guard send(status: 200, head: head, bodyBytes: size) else { return Outcome(status: 200, bytes: 0, keepOpen: false) }
            let sent = sendFiller(size) { connection.send(Self.chunk($0)) }
            let ended = sent == size && connection.send(Array("0\r\n\r\n".utf8))
            return Outcome(status: 200, bytes: sent, keepOpen: ended)
        case .oversizedCloseDelimitedBody(let size):
            let head = head(status: 200, headers: [("Content-Type", "application/json"), ("Connection", "close")])
            guard send(status: 200, head: head, bodyBytes: size) else { return Outcome(status: 200, bytes: 0, keepOpen: false) }
            let sent = sendFiller(size) { connection.send($0) }
            return Outcome(status: 200, bytes: sent, keepOpen: false)
        case .endlessChunkedBody:
            let head = head(
                status: 200, headers: [("Content-Type", "application/json"), ("Transfer-Encoding", "chunked")])
            guard send(status: 200, head: head + Self.chunk(Array("{\"flags\":{".utf8)), bodyBytes: 10) else {
                return Outcome(status: 200, bytes: 0, keepOpen: false)
            }
            var sent = 10
            while Socket.pause(milliseconds: 50, connection: connection.fd, stopFD: connection.stopFD), connection.send(Self.chunk([0x20])) {
                sent += 1
            }
            return Outcome(status: 200, bytes: sent, keepOpen: false)
        }
    }

    /// Sends `size` bytes of spaces in pieces; returns how many went out.
    private func sendFiller(_ size: Int, _ send: ([UInt8]) -> Bool) -> Int {
        let piece = [UInt8](repeating: 0x20, count: 64 << 10)
        var sent = 0
        while sent < size {
            let n = min(piece.count, size - sent)
            guard send(Array(piece[0..<n])) else { break }
            sent += n
        }
        return sent
    }

    private static func chunk(_ bytes: [UInt8]) -> [UInt8] {
        Array(String(bytes.count, radix: 16).utf8) + [13, 10] + bytes + [13, 10]
    }
}
