import FeatureFlags
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// One parsed HTTP/1.1 request.
struct HTTPRequest {
    var method: String
    /// The path without the query.
    var path: String
    /// Query parameters, percent-decoded.
    var query: [String: String]
    /// Header fields with lower-cased names.
    var headers: [String: String]
    var body: [UInt8]
    /// Request line, headers and body as received.
    var wireBytes: Int
    /// Whether the connection stays open after the answer (RFC 9112 §9.3).
    var keepAlive: Bool
    /// An HTTP/1.0 request that asked for keep-alive: its answers say `Connection: keep-alive`,
    /// the only way an HTTP/1.0 client learns the connection persists (RFC 9112 §9.3, Appendix C.2.2).
    var http10KeepAlive = false
}

/// Reads requests from one connection with limits on header and body size and on time:
/// a connection may stay idle between requests for the idle timeout, and once a request's
/// first byte has arrived, the whole request (header section and body) must arrive within
/// the request timeout, however often the client sends a byte.
struct HTTPReader {
    enum Outcome {
        case request(HTTPRequest)
        case closed
        /// The request broke a rule; answer `status` and close.
        case reject(status: Int, reason: String)
    }

    private enum Fill { case more, closed, late }

    let fd: Int32
    let stopFD: Int32
    let maxHeaderBytes: Int
    let maxBodyBytes: Int
    let idleMilliseconds: Int32
    let requestMilliseconds: Int32
    private var buffer: [UInt8] = []

    init(
        fd: Int32, stopFD: Int32, maxHeaderBytes: Int, maxBodyBytes: Int, idleMilliseconds: Int32,
        requestMilliseconds: Int32
    ) {
        self.fd = fd
        self.stopFD = stopFD
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
        self.idleMilliseconds = idleMilliseconds
        self.requestMilliseconds = requestMilliseconds
    }

    /// More bytes; `.closed` when the peer closed, the server stopped or the connection sat idle
    /// with no request begun; `.late` when a begun request passed its deadline (or stalled for
    /// the idle time). Sets `deadline` when the request's first byte arrives.
    private mutating func fill(deadline: inout ContinuousClock.Instant?) -> Fill {
        var wait = idleMilliseconds
        if let deadline {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { return .late }
            wait = min(wait, left.pollMilliseconds + 1)
        }
        switch Socket.waitReadable(fd, stopFD: stopFD, milliseconds: wait) {
        case .ready: break
        case .timedOut: return deadline == nil ? .closed : .late
        case .stopped, .failed: return .closed
        }
        var chunk = [UInt8](repeating: 0, count: 16_384)
        let n = recv(fd, &chunk, chunk.count, 0)
        guard n > 0 else { return .closed }
        buffer.append(contentsOf: chunk[0..<n])
        if deadline == nil { deadline = ContinuousClock.now + .milliseconds(requestMilliseconds) }
        return .more
    }

    mutating func next() -> Outcome {
        // Bytes already buffered (a pipelined request) start this request's clock now.
        var deadline: ContinuousClock.Instant? = buffer.isEmpty ? nil : ContinuousClock.now + .milliseconds(requestMilliseconds)
        let late = Outcome.reject(status: 408, reason: "the request did not arrive in time")
        var searched = 0
        var headEnd: (head: Int, next: Int)?
        while true {
            // Empty lines before a request line are ignored (RFC 9112 §2.2).
            let blank = HTTPFraming.leadingEmptyLines(buffer)
            if blank > 0 {
                buffer.removeFirst(blank)
                searched = 0
            }
            headEnd = HTTPFraming.headEnd(in: buffer, from: searched)
            if headEnd != nil { break }
            if HTTPFraming.hasBareCR(in: buffer, from: searched) { return .reject(status: 400, reason: "a bare CR in the head") }
            searched = HTTPFraming.resumePoint(after: buffer.count)
            if buffer.count > maxHeaderBytes { return HTTPFraming.tooLarge(buffer, limit: maxHeaderBytes).outcome }
            switch fill(deadline: &deadline) {
            case .more: continue
            case .closed: return .closed
            case .late: return late
            }
        }
        guard let end = headEnd else { return .closed }
        if end.head > maxHeaderBytes { return HTTPFraming.tooLarge(buffer, limit: maxHeaderBytes).outcome }
        let parsed = HTTPRequestHead.parse(buffer[0..<end.head])
        let headBytes = end.next
        buffer.removeFirst(end.next)
        let head: HTTPRequestHead
        switch parsed {
        case .success(let value): head = value
        case .failure(let rejection): return rejection.outcome
        }
        let framing: HTTPFraming.Body
        switch HTTPFraming.body(of: head) {
        case .success(let value): framing = value
        case .failure(let rejection): return rejection.outcome
        }
        if case .length(let length) = framing, length > maxBodyBytes { return .reject(status: 413, reason: "request body too large") }
        // RFC 9110 §10.1.1: a client that sent `Expect: 100-continue` waits for a 100 before the
        // body (curl for a second); an HTTP/1.0 request's expectation is ignored, and one we do
        // not know is refused with 417. A body that came along needs no interim answer.
        if head.minorVersion >= 1, let expect = head.headers["expect"] {
            guard expect.lowercased() == "100-continue" else { return .reject(status: 417, reason: "unsupported expectation") }
            let bodyPending = if case .length(let length) = framing { buffer.count < length } else { buffer.isEmpty }
            if bodyPending, !Socket.send(fd, ArraySlice(Self.continueLine), stopFD: stopFD, timeoutMilliseconds: requestMilliseconds) {
                return .closed
            }
        }
        let body: [UInt8]
        let bodyBytes: Int
        switch framing {
        case .length(let length):
            while buffer.count < length {
                switch fill(deadline: &deadline) {
                case .more: continue
                case .closed: return .closed
                case .late: return late
                }
            }
            body = Array(buffer[0..<length])
            bodyBytes = length
            buffer.removeFirst(length)
        case .chunked:
            var decoder = ChunkedBodyDecoder(maxBodyBytes: maxBodyBytes, maxFramingBytes: maxHeaderBytes)
            var consumedBytes = 0
            decoding: while true {
                switch decoder.advance(buffer) {
                case .done(let consumed):
                    consumedBytes = consumed
                    buffer.removeFirst(consumed)
                    break decoding
                case .reject(let rejection):
                    return rejection.outcome
                case .more:
                    switch fill(deadline: &deadline) {
                    case .more: continue
                    case .closed: return .closed
                    case .late: return late
                    }
                }
            }
            body = decoder.body
            bodyBytes = consumedBytes
        }
        return .request(
            HTTPRequest(
                method: head.method, path: head.path, query: head.query, headers: head.headers, body: body,
                wireBytes: headBytes + bodyBytes, keepAlive: head.keepAlive,
                http10KeepAlive: head.minorVersion == 0 && head.keepAlive))
    }

    /// The interim answer to `Expect: 100-continue`.
    static let continueLine = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
}

extension HTTPRequestHead.Rejection {
    /// The reader's answer for this refusal.
    var outcome: HTTPReader.Outcome { .reject(status: status, reason: reason) }
}

/// Builds HTTP/1.1 responses.
enum HTTPResponse {
    /// The reason phrases of RFC 9110 §15 (a fault may answer any status; one without a phrase
    /// here gets an empty one, which the status line allows).
    static let reasons: [Int: String] = [
        100: "Continue", 101: "Switching Protocols",
        200: "OK", 201: "Created", 202: "Accepted", 203: "Non-Authoritative Information", 204: "No Content", 205: "Reset Content",
        206: "Partial Content",
        300: "Multiple Choices", 301: "Moved Permanently", 302: "Found", 303: "See Other", 304: "Not Modified", 305: "Use Proxy",
        307: "Temporary Redirect", 308: "Permanent Redirect",
        400: "Bad Request", 401: "Unauthorized", 402: "Payment Required", 403: "Forbidden", 404: "Not Found",
        405: "Method Not Allowed", 406: "Not Acceptable", 407: "Proxy Authentication Required", 408: "Request Timeout",
        409: "Conflict", 410: "Gone", 411: "Length Required", 412: "Precondition Failed", 413: "Content Too Large",
        414: "URI Too Long", 415: "Unsupported Media Type", 416: "Range Not Satisfiable", 417: "Expectation Failed",
        421: "Misdirected Request", 422: "Unprocessable Content", 426: "Upgrade Required", 428: "Precondition Required",
        429: "Too Many Requests", 431: "Request Header Fields Too Large",
        500: "Internal Server Error", 501: "Not Implemented", 502: "Bad Gateway", 503: "Service Unavailable",
        504: "Gateway Timeout", 505: "HTTP Version Not Supported",
    ]

    static func head(status: Int, headers: [(String, String)]) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(reasons[status] ?? "")\r\nDate: \(HTTPDate.now())\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }
}
