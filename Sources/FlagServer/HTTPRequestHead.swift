import Foundation

/// A request's head — request line and header fields — parsed defensively (RFC 9112 §2–3,
/// §5, §9.3): any bytes give a head or a rejection with a status, never a crash. Depends on
/// Foundation only, so the fuzzer compiles it alone (`.ci/fuzz request`).
struct HTTPRequestHead: Equatable, Sendable {
    /// The method, e.g. `GET`.
    var method: String
    /// The path, percent-decoded, without the query; `*` for `OPTIONS *`.
    var path: String
    /// Query parameters, percent-decoded (`+` is a space); pairs without a name are skipped.
    var query: [String: String]
    /// Header fields with lower-cased names; repeated fields joined with `, `.
    var headers: [String: String]
    /// `1` for HTTP/1.1 (and a later HTTP/1.x, read as 1.1), `0` for HTTP/1.0.
    var minorVersion: Int

    /// Why a head was refused, and the status to answer.
    struct Rejection: Error, Equatable, Sendable {
        let status: Int
        let reason: String
    }

    /// Whether the connection stays open after the answer (RFC 9112 §9.3): HTTP/1.1 unless
    /// `Connection` has the `close` option; HTTP/1.0 only with the `keep-alive` option.
    var keepAlive: Bool {
        let options = Set((headers["connection"] ?? "").split(separator: ",").map {
            $0.trimmingSpaceAndTab().lowercased()
        })
        if options.contains("close") { return false }
        return minorVersion >= 1 || options.contains("keep-alive")
    }

    /// Parses the bytes before the blank line that ends a head.
    static func parse(_ bytes: ArraySlice<UInt8>) -> Result<HTTPRequestHead, Rejection> {
        var lines = split(bytes)
        guard !lines.isEmpty else { return .failure(Rejection(status: 400, reason: "empty request")) }
        let requestLine = lines.removeFirst()
        let parts = requestLine.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty, parts[0].allSatisfy(isTokenByte) else {
            return .failure(Rejection(status: 400, reason: "malformed request line"))
        }
        // HTTP-version = "HTTP/" DIGIT "." DIGIT (RFC 9112 §2.3). A later 1.x is read as 1.1, the
        // highest minor version this server implements (RFC 9110 §2.5); another major is refused.
        let version = Array(parts[2])
        guard version.count == 8, version.starts(with: Array("HTTP/".utf8)), version[6] == UInt8(ascii: "."),
            let major = asciiDigit(version[5]), let minorDigit = asciiDigit(version[7])
        else {
            return .failure(Rejection(status: 400, reason: "malformed request line"))
        }
        guard major == 1 else { return .failure(Rejection(status: 505, reason: "HTTP version not supported")) }
        let minor = min(minorDigit, 1)
        // Visible ASCII, and no fragment: a request target never carries `#` (RFC 9112 §3.2).
        guard parts[1].allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "#") }) else {
            return .failure(Rejection(status: 400, reason: "malformed request target"))
        }
        let method = String(decoding: parts[0], as: UTF8.self)
        let target = String(decoding: parts[1], as: UTF8.self)
        // The asterisk form asks about the server as a whole, and only `OPTIONS` may (§3.2.4).
        let asterisk = target == "*"
        if asterisk, method != "OPTIONS" {
            return .failure(Rejection(status: 400, reason: "the asterisk form is for OPTIONS only"))
        }
        guard let (path, query) = asterisk ? ("*", [:]) : splitTarget(target) else {
            return .failure(Rejection(status: 400, reason: "malformed request target"))
        }
        var headers: [String: String] = [:]
        var hostLines = 0
        for line in lines {
            if line.first == UInt8(ascii: " ") || line.first == UInt8(ascii: "\t") {
                return .failure(Rejection(status: 400, reason: "obsolete line folding"))
            }
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                return .failure(Rejection(status: 400, reason: "malformed header field"))
            }
            let name = line[line.startIndex..<colon]
            guard !name.isEmpty, name.allSatisfy(isTokenByte) else {
                return .failure(Rejection(status: 400, reason: "malformed header field name"))
            }
            let rawValue = line[line.index(after: colon)...]
            // RFC 9110 §5.5: CR, LF and NUL in a field value are invalid and dangerous (a bare
            // CR is what request smuggling hides behind): rejected, not passed on.
            guard !rawValue.contains(where: { $0 == UInt8(ascii: "\r") || $0 == 0 }) else {
                return .failure(Rejection(status: 400, reason: "CR or NUL in a header field value"))
            }
            let key = String(decoding: name, as: UTF8.self).lowercased()
            if key == "host" { hostLines += 1 }
            let value = String(decoding: rawValue, as: UTF8.self).trimmingSpaceAndTab()
            headers[key] = headers[key].map { $0 + ", " + value } ?? value
        }
        // RFC 9112 §3.2: an HTTP/1.1 request without a Host line, and any request with more
        // than one, is answered 400.
        if hostLines > 1 || (hostLines == 0 && minor == 1) {
            return .failure(Rejection(status: 400, reason: hostLines == 0 ? "no Host header field" : "more than one Host header field"))
        }
        // …and so is one whose value is not `uri-host [":" port]` (RFC 9112 §3.2, RFC 3986 §3.2.2).
        if let host = headers["host"], !isValidHost(host) {
            return .failure(Rejection(status: 400, reason: "invalid Host header field value"))
        }
        return .success(HTTPRequestHead(method: method, path: path, query: query, headers: headers, minorVersion: minor))
    }

    /// Whether `value` is a `Host` field value: `uri-host [":" port]` (RFC 9110 §7.2), where
    /// `uri-host` is an IP literal in brackets or a possibly empty registered name or IPv4
    /// address (unreserved characters, percent escapes, sub-delimiters; RFC 3986 §3.2.2) and
    /// `port` is digits. A user-info part (`user@host`) or whitespace inside is invalid.
    static func isValidHost(_ value: String) -> Bool {
        var rest = Substring(value)
        if rest.first == "[" {
            // IP-literal = "[" ( IPv6address / IPvFuture ) "]": its characters, not its grammar.
            guard let close = rest.firstIndex(of: "]") else { return false }
            let literal = rest[rest.index(after: rest.startIndex)..<close]
            guard !literal.isEmpty, literal.unicodeScalars.allSatisfy({ $0.isASCII && isIPLiteralByte(UInt8($0.value)) })
            else { return false }
            rest = rest[rest.index(after: close)...]
        } else {
            let end = rest.firstIndex(of: ":") ?? rest.endIndex
            guard rest[..<end].unicodeScalars.allSatisfy({ $0.isASCII && isRegNameByte(UInt8($0.value)) }) else { return false }
            rest = rest[end...]
        }
        guard let colon = rest.first else { return true }
        return colon == ":" && rest.dropFirst().allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// unreserved / pct-encoded / sub-delims (RFC 3986 §3.2.2), escapes checked loosely.
    private static func isRegNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default: return regNamePunctuation.contains(byte)
        }
    }

    /// The punctuation a registered name may hold: unreserved, `%` and the sub-delimiters.
    private static let regNamePunctuation = Array("-._~%!$&'()*+,;=".utf8)

    /// The characters of an IPv6 address or an IPvFuture literal.
    private static func isIPLiteralByte(_ byte: UInt8) -> Bool { isRegNameByte(byte) || byte == UInt8(ascii: ":") }

    /// The path and query of an origin-form target (`/path?a=1&b`), or an absolute-form one
    /// (`http://host/path`); nil for anything else.
    static func splitTarget(_ target: String) -> (path: String, query: [String: String])? {
        var rest = Substring(target)
        // Absolute form: the scheme in any case (RFC 3986 §3.1), then the authority, then a path
        // that may be empty (`http://host?a=1` asks for `/?a=1`).
        let lowered = rest.prefix(8).lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") {
            let afterScheme = rest.dropFirst(lowered.hasPrefix("http://") ? 7 : 8)
            let pathStart = afterScheme.firstIndex { $0 == "/" || $0 == "?" } ?? afterScheme.endIndex
            let pathAndQuery = afterScheme[pathStart...]
            rest = pathAndQuery.first == "/" ? pathAndQuery : "/" + pathAndQuery
        }
        guard rest.first == "/" else { return nil }
        let mark = rest.firstIndex(of: "?")
        let path = decode(mark.map { rest[..<$0] } ?? rest)
        var query: [String: String] = [:]
        if let mark {
            for pair in rest[rest.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: true) {
                let nameAndValue = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = decode(nameAndValue[0], plusIsSpace: true)
                guard !name.isEmpty else { continue }
                query[name] = nameAndValue.count > 1 ? decode(nameAndValue[1], plusIsSpace: true) : ""
            }
        }
        return (path, query)
    }

    /// Percent-decoded text; text whose escapes are invalid stays as sent.
    static func decode(_ text: Substring, plusIsSpace: Bool = false) -> String {
        let plain = plusIsSpace ? text.replacingOccurrences(of: "+", with: " ") : String(text)
        return plain.removingPercentEncoding ?? plain
    }

    /// The value of an ASCII digit, or nil.
    private static func asciiDigit(_ byte: UInt8) -> Int? {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) ? Int(byte - UInt8(ascii: "0")) : nil
    }

    /// RFC 9110 `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }

    /// The lines of a head, split at CRLF (a bare LF is accepted as a line end, as RFC 9112
    /// §2.2 allows).
    private static func split(_ bytes: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
            line.last == UInt8(ascii: "\r") ? line.dropLast() : line
        }
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs: HTTP's optional whitespace (OWS,
    /// RFC 9110 §5.6.3), and nothing else (no other Unicode space).
    func trimmingSpaceAndTab() -> String {
        var bytes = Substring(self).utf8[...]
        while let first = bytes.first, first == 0x20 || first == 0x09 { bytes = bytes.dropFirst() }
        while let last = bytes.last, last == 0x20 || last == 0x09 { bytes = bytes.dropLast() }
        return String(decoding: bytes, as: UTF8.self)
    }
}
