package import Foundation
import FlagServer
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback stand-in for LaunchDarkly's client-side service, written from its protocol (its
/// mobile SDK's requests and its stream's events), not from this package's client or server:
///
/// - polling: `GET /msdk/evalx/contexts/<base64url>` and `REPORT /msdk/evalx/context` answer the
///   flags set with ``setFlags(_:)`` as `{key: {value, version, …}}`, with an entity tag, 304
///   to a matching `If-None-Match`;
/// - streaming: `GET /meval/<base64url>` and `REPORT /meval` answer `text/event-stream` and stay
///   open; the test writes events (``send(_:data:)``), comments, or drops every stream.
///
/// Every request is recorded (method, path, `Authorization`). One thread per connection; all
/// of them end with ``stop()``.
package final class LaunchDarklyStandIn: @unchecked Sendable {
    // @unchecked: every mutable member is behind `lock`; sockets are only written under it.
    package struct Request: Sendable, Equatable {
        package let method: String
        package let path: String
        package let authorization: String?
        package let body: String
        /// The `Last-Event-ID` field, when one was sent.
        package var lastEventID: String? = nil
    }

    private let lock = NSLock()
    private var listener: LoopbackListener!
    private var flags: String = "{}"
    private var revision = 1
    private var streams: [Int32] = []
    private var log: [Request] = []
    private var contentType = "text/event-stream"
    private var stopped = false

    /// The port it listens on.
    package var port: UInt16 { listener.port }
    /// `http://127.0.0.1:<port>`.
    package var baseURL: URL { listener.baseURL }

    /// A stand-in answering `flags` (a JSON object of LaunchDarkly flag objects).
    package init(flags: String) throws {
        self.flags = flags
        listener = try LoopbackListener { [weak self] request, fd in self?.serve(request, fd) }
    }

    deinit { stop() }

    /// What polling answers from now on (a new entity tag).
    package func setFlags(_ json: String) {
        lock.withLock {
            flags = json
            revision += 1
        }
    }

    /// The `Content-Type` streams are answered with from now on (`text/event-stream` at first).
    package func setStreamContentType(_ type: String) { lock.withLock { contentType = type } }

    /// The requests so far.
    package var requests: [Request] { lock.withLock { log } }
    /// Streams open now.
    package var streamCount: Int { lock.withLock { streams.count } }

    /// Writes `event: name` with `data` (one line) to every open stream.
    package func send(_ name: String, data: String) { write("event: \(name)\ndata: \(data)\n\n") }
    /// Writes `text` as it is to every open stream (fields a test spells itself).
    package func sendRaw(_ text: String) { write(text) }
    /// Writes a comment line (LaunchDarkly's heartbeat) to every open stream.
    package func comment() { write(":\n\n") }

    /// Closes every open stream (a dropped connection).
    package func dropStreams() {
        let open = lock.withLock { () -> [Int32] in
            defer { streams.removeAll() }
            return streams
        }
        for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    /// Stops listening and ends every connection and thread.
    package func stop() {
        lock.withLock { stopped = true }
        listener.stop()
    }

    private func write(_ text: String) {
        let bytes = Array(text.utf8)
        lock.withLock {
            for fd in streams { _ = bytes.withUnsafeBytes { LoopbackSocket.send(fd, $0) } }
        }
    }

    /// Answers one request (a stream stays open until dropped or stopped).
    private func serve(_ received: LoopbackListener.Request, _ fd: Int32) {
        let headers = received.headers
        let body = received.body
        let method = received.method
        let path = received.path
        lock.withLock {
            log.append(
                Request(
                    method: method, path: path, authorization: headers["authorization"], body: String(decoding: body, as: UTF8.self),
                    lastEventID: headers["last-event-id"]))
        }
        let streaming = (method == "GET" && path.hasPrefix("/meval/")) || (method == "REPORT" && path == "/meval")
        let polling = (method == "GET" && path.hasPrefix("/msdk/evalx/contexts/")) || (method == "REPORT" && path == "/msdk/evalx/context")
        if streaming {
            let admitted = lock.withLock { () -> Bool in
                guard !stopped else { return false }
                let response = "HTTP/1.1 200 OK\r\nContent-Type: \(contentType)\r\nCache-Control: no-cache\r\n\r\n"
                _ = Array(response.utf8).withUnsafeBytes { LoopbackSocket.send(fd, $0) }
                streams.append(fd)
                return true
            }
            guard admitted else { return }
            // Held until the peer or the test closes it.
            var chunk = [UInt8](repeating: 0, count: 1_024)
            while recv(fd, &chunk, chunk.count, 0) > 0 {}
            lock.withLock { streams.removeAll { $0 == fd } }
            return
        }
        let (status, text, etag): (String, String, String) = lock.withLock {
            guard polling else { return ("404 Not Found", "{}", "") }
            let etag = "\"p\(revision)\""
            if headers["if-none-match"] == etag { return ("304 Not Modified", "", etag) }
            return ("200 OK", flags, etag)
        }
        let bytes = Array(text.utf8)
        var response = "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nConnection: close\r\n"
        if !etag.isEmpty { response += "ETag: \(etag)\r\n" }
        response += "Content-Length: \(bytes.count)\r\n\r\n"
        let all = Array(response.utf8) + bytes
        _ = all.withUnsafeBytes { LoopbackSocket.send(fd, $0) }
    }
}
