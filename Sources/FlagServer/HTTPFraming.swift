/// Where a request's head ends and how its content is delimited (RFC 9112 §2.2, §6, §7.1),
/// worked out from buffered bytes alone. Depends on ``HTTPRequestHead`` only, so the fuzzer
/// compiles it beside the head parser (`.ci/fuzz request`).
enum HTTPFraming {
    /// The bytes of empty lines (CRLF or a bare LF) at the start of `buffer`, which a server
    /// ignores before a request line (RFC 9112 §2.2). A lone CR at the end may begin one more.
    static func leadingEmptyLines(_ buffer: [UInt8]) -> Int {
        var index = 0
        while index < buffer.count {
            if buffer[index] == lf {
                index += 1
            } else if buffer[index] == cr, index + 1 < buffer.count, buffer[index + 1] == lf {
                index += 2
            } else {
                break
            }
        }
        return index
    }

    /// The end of a head: the empty line that closes it, ended by CRLF or by a bare LF (RFC 9112
    /// §2.2 lets a recipient take a bare LF as a line end). `head` is where the head's bytes
    /// end, `next` where the content begins; the search starts at `from` (bytes before it were
    /// searched already). Nil while the empty line has not arrived.
    static func headEnd(in buffer: [UInt8], from: Int = 0) -> (head: Int, next: Int)? {
        var index = max(from, 0)
        while index < buffer.count {
            if buffer[index] == lf {
                if index + 1 < buffer.count, buffer[index + 1] == lf { return (index, index + 2) }
                if index + 2 < buffer.count, buffer[index + 1] == cr, buffer[index + 2] == lf { return (index, index + 3) }
            }
            index += 1
        }
        return nil
    }

    /// Whether `buffer` holds, from `from` on, a CR followed by anything but LF: an invalid head
    /// (RFC 9112 §2.2), refused as soon as it is seen rather than waited on — a client ending
    /// lines with CR alone would otherwise wait for the request timeout.
    static func hasBareCR(in buffer: [UInt8], from: Int = 0) -> Bool {
        var index = max(from, 0)
        while index + 1 < buffer.count {
            if buffer[index] == cr, buffer[index + 1] != lf { return true }
            index += 1
        }
        return false
    }

    /// Where to resume ``headEnd(in:from:)`` after it found nothing in `count` bytes: the last
    /// two bytes may begin the empty line.
    static func resumePoint(after count: Int) -> Int { max(count - 2, 0) }

    /// The refusal of a head longer than `limit` bytes: 414 when its request line alone passes
    /// the limit (RFC 9112 §3: a target longer than the server parses), else 431.
    static func tooLarge(_ buffer: [UInt8], limit: Int) -> HTTPRequestHead.Rejection {
        let start = leadingEmptyLines(buffer)
        guard let lineEnd = buffer[start...].prefix(limit + 1).firstIndex(of: lf), lineEnd - start <= limit else {
            return .init(status: 414, reason: "request target too long")
        }
        return .init(status: 431, reason: "header section too large")
    }

    /// How a request's content is delimited.
    enum Body: Equatable, Sendable {
        /// `Content-Length` bytes (zero when the request declares neither length nor coding).
        case length(Int)
        /// The chunked transfer coding (RFC 9112 §7.1).
        case chunked
    }

    /// The framing a head declares, or the refusal RFC 9112 §6 asks for: `Transfer-Encoding` on
    /// an HTTP/1.0 request (§6.1) or beside `Content-Length` (§6.3; the server may refuse it) is
    /// 400, as is a coding list whose last coding is not `chunked` or that applies `chunked`
    /// twice (§6.3, §7.1); a coding before `chunked` (`gzip, chunked`) is 501 (§6.1: not
    /// understood); `Content-Length` must be digits (RFC 9110 §8.6 — two lines arrive joined and
    /// are refused; digits beyond `Int` are a length too large, not a bad one).
    static func body(of head: HTTPRequestHead) -> Result<Body, HTTPRequestHead.Rejection> {
        let declared = head.headers["content-length"]
        if let codings = head.headers["transfer-encoding"] {
            if head.minorVersion == 0 {
                return .failure(.init(status: 400, reason: "Transfer-Encoding in an HTTP/1.0 request"))
            }
            if declared != nil {
                return .failure(.init(status: 400, reason: "both Transfer-Encoding and Content-Length"))
            }
            let names = codings.split(separator: ",").map { element in
                String(element.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)[0])
                    .trimmingSpaceAndTab().lowercased()
            }.filter { !$0.isEmpty }
            guard names.last == "chunked", names.dropLast().allSatisfy({ $0 != "chunked" }) else {
                return .failure(.init(status: 400, reason: "Transfer-Encoding does not end in one chunked"))
            }
            if let other = names.first, names.count > 1 {
                return .failure(.init(status: 501, reason: "transfer coding \(other.prefix(32)) is not supported"))
            }
            return .success(.chunked)
        }
        let text = declared ?? "0"
        guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            return .failure(.init(status: 400, reason: "bad Content-Length"))
        }
        return .success(.length(Int(text) ?? Int.max))
    }

    static let cr = UInt8(ascii: "\r")
    static let lf = UInt8(ascii: "\n")
}

/// Decodes a chunked request body (RFC 9112 §7.1) from a connection's buffer as its bytes
/// arrive: each call resumes where the last one stopped, so a body trickled a byte at a time
/// costs no more than one sent at once.
///
/// Strict where leniency lets a request hide inside another (request smuggling): every chunk
/// line ends in CRLF (a bare LF or CR is refused), a chunk size is hexadecimal digits only,
/// after it comes nothing or an extension (`;`), and chunk data is followed by exactly CRLF.
/// Extensions and trailer fields are read and dropped (§7.1.1, §7.1.2). Bounded: the decoded
/// body by `maxBodyBytes` (413 as soon as a chunk size says it would pass it), and every byte
/// that is not data — sizes, extensions, line ends, trailers — by `maxFramingBytes` (413).
/// Any other fault is 400.
struct ChunkedBodyDecoder {
    /// What the buffer holds so far.
    enum Step: Equatable {
        /// The body is not complete yet.
        case more
        /// The body is complete; `consumed` bytes of the buffer were its chunked form.
        case done(consumed: Int)
        /// The body breaks a rule; answer the status and close.
        case reject(HTTPRequestHead.Rejection)
    }

    let maxBodyBytes: Int
    let maxFramingBytes: Int
    /// The decoded body so far (complete after `.done`).
    private(set) var body: [UInt8] = []
    /// The next byte of the buffer to read.
    private var position: Int
    /// Bytes read that were not chunk data.
    private var framing = 0
    private var phase = Phase.size

    private enum Phase {
        case size
        case data(remaining: Int)
        case dataEnd
        case trailer
    }

    /// A decoder whose body starts at `start` in the buffers it is given.
    init(maxBodyBytes: Int, maxFramingBytes: Int, start: Int = 0) {
        self.maxBodyBytes = maxBodyBytes
        self.maxFramingBytes = maxFramingBytes
        self.position = start
    }

    /// Reads on from where the last call stopped; `buffer` must hold the earlier bytes unchanged.
    mutating func advance(_ buffer: [UInt8]) -> Step {
        while true {
            switch phase {
            case .size:
                switch line(in: buffer) {
                case .more: return .more
                case .reject(let rejection): return .reject(rejection)
                case .line(let start, let end):
                    switch chunkSize(buffer[start..<end]) {
                    case .failure(let rejection): return .reject(rejection)
                    case .success(0): phase = .trailer
                    case .success(let size): phase = .data(remaining: size)
                    }
                }
            case .data(let remaining):
                let take = min(remaining, buffer.count - position)
                body.append(contentsOf: buffer[position..<(position + take)])
                position += take
                guard take == remaining else {
                    phase = .data(remaining: remaining - take)
                    return .more
                }
                phase = .dataEnd
            case .dataEnd:
                let available = buffer.count - position
                if available >= 1, buffer[position] != HTTPFraming.cr || (available >= 2 && buffer[position + 1] != HTTPFraming.lf) {
                    return .reject(.init(status: 400, reason: "chunk data not followed by CRLF"))
                }
                guard available >= 2 else { return .more }
                position += 2
                framing += 2
                phase = .size
            case .trailer:
                switch line(in: buffer) {
                case .more: return .more
                case .reject(let rejection): return .reject(rejection)
                case .line(let start, let end):
                    if start == end { return .done(consumed: position) }
                    let field = buffer[start..<end]
                    guard let colon = field.firstIndex(of: UInt8(ascii: ":")), colon > start,
                        field[start..<colon].allSatisfy(HTTPRequestHead.isTokenByte), !field.contains(0)
                    else {
                        return .reject(.init(status: 400, reason: "malformed trailer field"))
                    }
                }
            }
        }
    }

    private enum Line {
        case more
        case line(start: Int, end: Int)
        case reject(HTTPRequestHead.Rejection)
    }

    /// The next framing line (without its CRLF), moving past it; refuses a bare CR or LF and a
    /// line that would pass the framing limit.
    private mutating func line(in buffer: [UInt8]) -> Line {
        var index = position
        while index < buffer.count {
            let byte = buffer[index]
            if byte == HTTPFraming.lf { return .reject(.init(status: 400, reason: "a bare LF in chunked framing")) }
            if byte == HTTPFraming.cr {
                guard index + 1 < buffer.count else { break }
                guard buffer[index + 1] == HTTPFraming.lf else {
                    return .reject(.init(status: 400, reason: "a bare CR in chunked framing"))
                }
                let start = position
                framing += index + 2 - position
                position = index + 2
                guard framing <= maxFramingBytes else { return .reject(Self.framingTooLarge) }
                return .line(start: start, end: index)
            }
            index += 1
        }
        return framing + (buffer.count - position) > maxFramingBytes ? .reject(Self.framingTooLarge) : .more
    }

    private static let framingTooLarge = HTTPRequestHead.Rejection(status: 413, reason: "chunked framing too large")

    /// `chunk-size [ chunk-ext ]`: hexadecimal digits, then nothing, or optional whitespace and
    /// `;` with an extension of visible characters, spaces and tabs.
    private func chunkSize(_ line: ArraySlice<UInt8>) -> Result<Int, HTTPRequestHead.Rejection> {
        let bad = HTTPRequestHead.Rejection(status: 400, reason: "malformed chunk size")
        var size = 0
        var index = line.startIndex
        while index < line.endIndex, let digit = Self.hexValue(line[index]) {
            // Sizes that would pass the body limit are refused before their data arrives.
            let room = maxBodyBytes - body.count
            guard digit <= room, size <= (room - digit) / 16 else {
                return .failure(.init(status: 413, reason: "request body too large"))
            }
            size = size * 16 + digit
            index += 1
        }
        guard index > line.startIndex else { return .failure(bad) }
        // Whitespace may only come before an extension's `;` (BWS): "2 " alone is malformed.
        let afterDigits = line[index...]
        let rest = afterDigits.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        guard afterDigits.isEmpty || rest.first == UInt8(ascii: ";") else { return .failure(bad) }
        guard rest.allSatisfy({ $0 == UInt8(ascii: "\t") || ($0 >= 0x20 && $0 != 0x7F) }) else { return .failure(bad) }
        return .success(size)
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a")) + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte - UInt8(ascii: "A")) + 10
        default: nil
        }
    }
}
