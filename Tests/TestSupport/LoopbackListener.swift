package import Foundation
import FeatureFlags
import FlagServer
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The socket side of the tests' loopback stand-ins: listens on `127.0.0.1`, reads one HTTP/1.1
/// request per connection and hands it, with the connection, to `answer` on the connection's
/// own thread. ``stop()`` ends listening, shuts every open connection and waits (at most 5 s)
/// for the threads.
package final class LoopbackListener: @unchecked Sendable {
    // @unchecked: `connections` and `stopped` are behind `lock`; the rest never changes.
    /// One request as received.
    package struct Request: Sendable {
        package let method: String
        /// The path, without the query.
        package let path: String
        /// Header fields by lowercased name.
        package let headers: [String: String]
        package let body: [UInt8]
    }

    private let lock = NSLock()
    private let listener: Int32
    private var connections: [Int32] = []
    private var stopped = false
    private let group = DispatchGroup()
    private let answer: @Sendable (Request, Int32) -> Void
    /// The port it listens on.
    package let port: UInt16

    /// `http://127.0.0.1:<port>`.
    package var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Listens; `answer` writes the response to the connection (closed when it returns).
    package init(answer: @escaping @Sendable (Request, Int32) -> Void) throws {
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
        self.answer = answer
        group.enter()
        Thread { [self] in acceptLoop() }.start()
    }

    deinit { stop() }

    /// Stops listening and ends every connection and thread.
    package func stop() {
        let (open, already) = lock.withLock { () -> ([Int32], Bool) in
            defer { stopped = true }
            return (connections, stopped)
        }
        guard !already else { return }
        // Shut down, not closed: the accept loop closes the listener when it ends. Closed here, its number could be
        // given to another test's socket before the loop's next `accept`, which would then take that test's requests.
        shutdown(listener, Int32(SHUT_RDWR))
        for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
        _ = group.wait(timeout: .now() + 5)
    }

    /// Writes `head` (status line and fields, without the blank line) and `body` with its length.
    package static func respond(_ fd: Int32, _ head: String, body: [UInt8] = []) {
        let all = Array("\(head)\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n".utf8) + body
        _ = all.withUnsafeBytes { LoopbackSocket.send(fd, $0) }
    }

    private func acceptLoop() {
        defer {
            close(listener)
            group.leave()
        }
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
                if let request = Self.read(fd) { answer(request, fd) }
                lock.withLock { connections.removeAll { $0 == fd } }
                close(fd)
                group.leave()
            }.start()
        }
    }

    /// One request from `fd`; nil when the peer closes first or sends no request line.
    private static func read(_ fd: Int32) -> Request? {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        var headEnd: Int?
        while headEnd == nil {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { return nil }
            received += chunk[0..<n]
            headEnd = received.indices.dropLast(3).first {
                received[$0] == 13 && received[$0 + 1] == 10 && received[$0 + 2] == 13 && received[$0 + 3] == 10
            }
        }
        let head = String(decoding: received[..<headEnd!], as: UTF8.self)
        let lines = head.components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        guard parts.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(received[(headEnd! + 4)...])
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while body.count < length {
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { return nil }
            body += chunk[0..<n]
        }
        let path = String(parts[1].split(separator: "?", maxSplits: 1)[0])
        return Request(method: String(parts[0]), path: path, headers: headers, body: body)
    }
}

/// A static host, as a CDN or `python3 -m http.server` is one: `GET` (and `HEAD`) of a file it
/// holds answers 200 with an `ETag` (304 to a matching `If-None-Match`), an unknown path 404, and
/// every other method — a `POST` of a context among them — 501.
package final class StaticHost: Sendable {
    private let listener: LoopbackListener
    private let files: Locked<[String: [UInt8]]>
    private let log = Locked<[String]>([])

    /// Serves `files` by path (`/flags.json`).
    package init(files: [String: String]) throws {
        let held = Locked(files.mapValues { Array($0.utf8) })
        let log = self.log
        self.files = held
        listener = try LoopbackListener { request, fd in
            log.withLock { $0.append("\(request.method) \(request.path)") }
            guard request.method == "GET" || request.method == "HEAD" else {
                return LoopbackListener.respond(fd, "HTTP/1.1 501 Not Implemented\r\nContent-Type: text/plain", body: Array("Unsupported method".utf8))
            }
            guard let bytes = held.withLock({ $0[request.path] }) else {
                return LoopbackListener.respond(fd, "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain")
            }
            let etag = "\"\(String(bytes.reduce(UInt64(14_695_981_039_346_656_037)) { ($0 ^ UInt64($1)) &* 1_099_511_628_211 }, radix: 16))\""
            if request.headers["if-none-match"] == etag {
                return LoopbackListener.respond(fd, "HTTP/1.1 304 Not Modified\r\nETag: \(etag)")
            }
            LoopbackListener.respond(
                fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nETag: \(etag)", body: request.method == "HEAD" ? [] : bytes)
        }
    }

    /// `http://127.0.0.1:<port>/<path>`.
    package func url(_ path: String) -> URL { listener.baseURL.appendingPathComponent(path) }

    /// Replaces (or adds) the file at `path`.
    package func set(_ path: String, _ text: String) { files.withLock { $0[path] = Array(text.utf8) } }

    /// `METHOD /path` of each request so far.
    package var requests: [String] { log.withLock { $0 } }

    /// Stops serving.
    package func stop() { listener.stop() }
}
