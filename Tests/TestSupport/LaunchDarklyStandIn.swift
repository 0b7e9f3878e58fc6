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
    private let listener: Int32
    /// The port it listens on.
    package let port: UInt16
    private var flags: String = "{}"
    private var revision = 1
    private var streams: [Int32] = []
    private var connections: [Int32] = []
    private var log: [Request] = []
    private var stopped = false
    private var contentType = "text/event-stream"
    private let group = DispatchGroup()

    /// `http://127.0.0.1:<port>`.
    package var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// A stand-in answering `flags` (a JSON object of LaunchDarkly flag objects).
    package init(flags: String) throws {
        let fd = LoopbackSocket.make()
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw CocoaError(.fileReadUnknown)
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = UInt16(bigEndian: actual.sin_port)
        self.flags = flags
        let thread = Thread { [self] in acceptLoop() }
        group.enter()
        thread.start()
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
        let (open, already) = lock.withLock { () -> ([Int32], Bool) in
            defer { stopped = true }
            return (connections, stopped)
        }
        guard !already else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
        _ = group.wait(timeout: .now() + 5)
    }

    private func write(_ text: String) {
        let bytes = Array(text.utf8)
        lock.withLock {
            for fd in streams { _ = bytes.withUnsafeBytes { LoopbackSocket.send(fd, $0) } }
        }
    }

    private func acceptLoop() {
        defer { group.leave() }
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 { return }
            let admitted = lock.withLock { () -> Bool in
                if stopped { return false }
                connections.append(fd)
                return true
            }
            guard admitted else {
                close(fd)
                return
            }
            group.enter()
            Thread { [self] in
                serve(fd)
                lock.withLock { connections.removeAll { $0 == fd } }
                close(fd)
                group.leave()
            }.start()
        }
    }

    /// Reads one request and answers it (a stream stays open until dropped or stopped).
    private func serve(_ fd: Int32) {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        var headEnd: Int?
        while headEnd == nil {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { return }
            received += chunk[0..<n]
            headEnd = received.indices.dropLast(3).first {
                received[$0] == 13 && received[$0 + 1] == 10 && received[$0 + 2] == 13 && received[$0 + 3] == 10
            }
        }
        let head = String(decoding: received[..<headEnd!], as: UTF8.self)
        let lines = head.components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        guard parts.count >= 2 else { return }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(received[(headEnd! + 4)...])
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while body.count < length {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { return }
            body += chunk[0..<n]
        }
        let method = String(parts[0])
        let target = String(parts[1])
        let path = String(target.split(separator: "?", maxSplits: 1)[0])
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
