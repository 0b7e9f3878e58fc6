import Foundation
import Testing
import TestSupport
@testable import FlagServer

/// Where a request's head ends and how its content is delimited (RFC 9112 §2.2, §6, §7.1):
/// the pieces alone, then the server reading them from a socket.
@Suite("HTTP framing")
struct HTTPFramingTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func aHeadEndsAtAnEmptyLineEndedByCRLFOrABareLF() {
        #expect(HTTPFraming.headEnd(in: Self.bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\nbody"))! == (24, 27))
        #expect(HTTPFraming.headEnd(in: Self.bytes("GET / HTTP/1.1\nHost: a\n\nbody"))! == (22, 24))
        #expect(HTTPFraming.headEnd(in: Self.bytes("GET / HTTP/1.1\r\nHost: a\n\r\n"))! == (23, 26))
        #expect(HTTPFraming.headEnd(in: Self.bytes("GET / HTTP/1.1\r\nHost: a\r\n\r")) == nil)
        #expect(HTTPFraming.headEnd(in: Self.bytes("GET / HTTP/1.1\r\nHost: a\r\n")) == nil)
        #expect(HTTPFraming.headEnd(in: Self.bytes("GET / HTTP/1.1\r\nHost: a\r\r\n")) == nil, "a bare CR ends no line")
        // Resuming a search finds what one search from the start finds, wherever it stopped.
        let head = Self.bytes("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        for cut in 0...head.count {
            let resume = HTTPFraming.headEnd(in: Array(head[..<cut])) == nil ? HTTPFraming.resumePoint(after: cut) : 0
            #expect(HTTPFraming.headEnd(in: head, from: resume)! == (24, 27), "cut at \(cut)")
        }
    }

    @Test func emptyLinesBeforeARequestLineAreSkipped() {
        #expect(HTTPFraming.leadingEmptyLines(Self.bytes("\r\n\n\r\nGET")) == 5)
        #expect(HTTPFraming.leadingEmptyLines(Self.bytes("GET")) == 0)
        #expect(HTTPFraming.leadingEmptyLines(Self.bytes("\r")) == 0, "a CR alone may begin one more")
        #expect(HTTPFraming.leadingEmptyLines(Self.bytes("\rGET")) == 0)
    }

    static func framing(_ fields: String, version: String = "1.1") -> Result<HTTPFraming.Body, HTTPRequestHead.Rejection> {
        guard case .success(let head) = HTTPRequestHead.parse(ArraySlice(bytes("POST / HTTP/\(version)\r\nHost: a\(fields)"))) else {
            return .failure(.init(status: 0, reason: "head refused"))
        }
        return HTTPFraming.body(of: head)
    }

    @Test func theHeadDeclaresTheFramingOrIsRefused() {
        #expect(Self.framing("") == .success(.length(0)))
        #expect(Self.framing("\r\nContent-Length: 12") == .success(.length(12)))
        #expect(Self.framing("\r\nContent-Length: 99999999999999999999999") == .success(.length(Int.max)), "too large, not bad")
        #expect(Self.framing("\r\nTransfer-Encoding: chunked") == .success(.chunked))
        #expect(Self.framing("\r\nTransfer-Encoding: Chunked ; x=1") == .success(.chunked), "names are case-insensitive")
        #expect(Self.framing("\r\nTransfer-Encoding: ,chunked,") == .success(.chunked), "empty list elements are ignored")
        let refused: [(String, String, Int)] = [
            ("\r\nContent-Length: -1", "1.1", 400), ("\r\nContent-Length: 1, 1", "1.1", 400), ("\r\nContent-Length: 1\r\nContent-Length: 1", "1.1", 400),
            ("\r\nContent-Length: ", "1.1", 400), ("\r\nContent-Length: 0x10", "1.1", 400),
            ("\r\nTransfer-Encoding: chunked", "1.0", 400),
            ("\r\nTransfer-Encoding: chunked\r\nContent-Length: 5", "1.1", 400),
            ("\r\nTransfer-Encoding: gzip", "1.1", 400), ("\r\nTransfer-Encoding: chunked, gzip", "1.1", 400),
            ("\r\nTransfer-Encoding: chunked, chunked", "1.1", 400), ("\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked", "1.1", 400),
            ("\r\nTransfer-Encoding: ", "1.1", 400), ("\r\nTransfer-Encoding: xchunked", "1.1", 400),
            ("\r\nTransfer-Encoding: gzip, chunked", "1.1", 501), ("\r\nTransfer-Encoding: identity, chunked", "1.1", 501),
        ]
        for (fields, version, status) in refused {
            guard case .failure(let rejection) = Self.framing(fields, version: version) else {
                Issue.record("accepted \(fields.debugDescription) on HTTP/\(version)")
                continue
            }
            #expect(rejection.status == status, "\(fields.debugDescription): \(rejection.reason)")
        }
    }

    /// The decoder's answer for `wire`, fed at once and fed in two pieces at every cut: both must
    /// agree (a body trickled in pieces decodes as one sent at once).
    static func decode(_ wire: String, maxBody: Int = 1_000, maxFraming: Int = 200) -> (ChunkedBodyDecoder.Step, String) {
        let all = bytes(wire)
        var whole = ChunkedBodyDecoder(maxBodyBytes: maxBody, maxFramingBytes: maxFraming)
        let step = whole.advance(all)
        for cut in 0..<all.count {
            var pieces = ChunkedBodyDecoder(maxBodyBytes: maxBody, maxFramingBytes: maxFraming)
            var piecewise = pieces.advance(Array(all[..<cut]))
            if piecewise == .more { piecewise = pieces.advance(all) }
            #expect(piecewise == step, "cut at \(cut) of \(wire.debugDescription)")
            #expect(pieces.body == whole.body, "cut at \(cut) of \(wire.debugDescription)")
        }
        return (step, String(decoding: whole.body, as: UTF8.self))
    }

    @Test func chunkedBodiesDecode() {
        let cases: [(String, String)] = [
            ("0\r\n\r\n", ""),
            ("5\r\nhello\r\n0\r\n\r\n", "hello"),
            ("5\r\nhello\r\n1\r\n \r\n6\r\nworld!\r\n0\r\n\r\n", "hello world!"),
            ("A\r\n0123456789\r\na\r\nabcdefghij\r\n0\r\n\r\n", "0123456789abcdefghij"),
            ("0005\r\nhello\r\n000\r\n\r\n", "hello"),
            ("5;name=value\r\nhello\r\n0;last\r\n\r\n", "hello"),
            ("5 ;a=\"quoted; still\"\r\nhello\r\n0\r\n\r\n", "hello"),
            ("5\r\nhello\r\n0\r\nX-Checksum: abc\r\nX-Other:\r\n\r\n", "hello"),
            ("3\r\n\r\n\n\r\n0\r\n\r\n", "\r\n\n"),
        ]
        for (wire, body) in cases {
            let (step, decoded) = Self.decode(wire)
            #expect(step == .done(consumed: wire.utf8.count), "\(wire.debugDescription)")
            #expect(decoded == body, "\(wire.debugDescription)")
        }
        // Bytes after the body belong to the next request.
        let (step, _) = Self.decode("1\r\nx\r\n0\r\n\r\nGET / HTTP/1.1\r\n")
        #expect(step == .done(consumed: 11))
    }

    @Test func incompleteChunkedBodiesWaitForMore() {
        for wire in ["", "5", "5\r", "5\r\nhel", "5\r\nhello", "5\r\nhello\r", "5\r\nhello\r\n0\r\n", "0\r\nX-A: b\r\n", "0\r\n\r"] {
            #expect(Self.decode(wire).0 == .more, "\(wire.debugDescription)")
        }
    }

    @Test func malformedChunkedBodiesAreRefused() {
        let cases: [(String, Int)] = [
            ("5\nhello\r\n0\r\n\r\n", 400), ("5\r\nhello\n0\r\n\r\n", 400), ("5\r\nhello\r\n0\n\n", 400), ("5\rhello", 400),
            ("5\r\nhelloX\r\n0\r\n\r\n", 400), ("5\r\nhello\rX", 400), ("\r\n", 400), (";ext\r\n", 400), ("x\r\n", 400),
            ("-5\r\n", 400), ("+5\r\n", 400), ("0x5\r\n", 400), ("5 junk\r\n", 400), ("5 \r\n", 400), ("5\t\r\n", 400), ("5\u{0}\r\n", 400), ("5;a\u{0}b\r\n", 400),
            ("5;a\u{7F}\r\n", 400), ("0\r\n: no name\r\n\r\n", 400), ("0\r\nno colon\r\n\r\n", 400), ("0\r\nBad Name: x\r\n\r\n", 400),
            ("0\r\nX-A: b\u{0}\r\n\r\n", 400),
            // Over the limits: the body (1,000 bytes here) as soon as a size says so, the framing (200).
            ("3E9\r\n", 413), ("FFFFFFFFFFFFFFFFFFFFFFFF\r\n", 413), ("200\r\n" + String(repeating: "x", count: 512) + "\r\n200\r\n", 413),
            ("0;" + String(repeating: "e", count: 300), 413), ("0\r\nX-A: " + String(repeating: "v", count: 300), 413),
        ]
        for (wire, status) in cases {
            guard case .reject(let rejection) = Self.decode(wire).0 else {
                Issue.record("not refused: \(wire.debugDescription)")
                continue
            }
            #expect(rejection.status == status, "\(wire.debugDescription): \(rejection.reason)")
        }
        // Exactly at the body limit is accepted.
        let full = "3E8\r\n" + String(repeating: "x", count: 1_000) + "\r\n0\r\n\r\n"
        var decoder = ChunkedBodyDecoder(maxBodyBytes: 1_000, maxFramingBytes: 200)
        #expect(decoder.advance(Self.bytes(full)) == .done(consumed: full.utf8.count))
        #expect(decoder.body.count == 1_000)
    }

    @Test func optionalWhitespaceIsSpacesAndTabsOnly() {
        #expect(" \t a b \t ".trimmingSpaceAndTab() == "a b")
        #expect("\u{A0}a\u{A0}".trimmingSpaceAndTab() == "\u{A0}a\u{A0}", "no other Unicode space")
        #expect(" \t ".trimmingSpaceAndTab() == "")
        #expect("".trimmingSpaceAndTab() == "")
    }
}

/// The server reading framed requests from a socket.
@Suite("FlagServer framing")
struct ServerFramingTests {
    static let context = #"{"context":{"targetingKey":"u1"}}"#
    static let post = "POST /ofrep/v1/evaluate/flags HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"

    /// Everything the server sends on one connection until it closes.
    static func exchange(_ server: FlagServer, _ requests: String) throws -> String {
        let connection = try #require(RawConnection(port: server.port))
        connection.send(requests)
        return connection.receive(timeout: 5_000)
    }

    /// The contents of each answer in `text` (what follows each head), in order.
    static func contents(_ text: String) -> [String] {
        text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { $0.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n") }
    }

    static func chunked(_ body: String, size: Int, trailer: String = "") -> String {
        var wire = ""
        var rest = Substring(body)
        while !rest.isEmpty {
            let piece = rest.prefix(size)
            wire += String(piece.utf8.count, radix: 16) + "\r\n" + piece + "\r\n"
            rest = rest.dropFirst(piece.count)
        }
        return wire + "0\r\n" + trailer + "\r\n"
    }

    @Test func aChunkedBodyIsReadAsItsLengthWouldBe() throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let byLength = try Self.exchange(
            server, Self.post + "Content-Length: \(Self.context.utf8.count)\r\nConnection: close\r\n\r\n" + Self.context)
        // Two chunked requests on one connection (the second in chunks of one byte, with a
        // trailer), then a closing one: each answered in turn, as the one sent by length.
        let chunked = try Self.exchange(
            server,
            Self.post + "Transfer-Encoding: chunked\r\n\r\n" + Self.chunked(Self.context, size: 10)
                + Self.post + "Transfer-Encoding: chunked\r\n\r\n" + Self.chunked(Self.context, size: 1, trailer: "X-Sum: 1\r\n")
                + Self.post + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + Self.chunked(Self.context, size: 7))
        #expect(byLength.hasPrefix("HTTP/1.1 200 "), "\(byLength)")
        let expected = try #require(Self.contents(byLength).first)
        #expect(Self.contents(chunked) == [expected, expected, expected], "\(chunked)")
    }

    @Test func aChunkedBodyThatBreaksTheRulesIsRefusedAndTheConnectionClosed() throws {
        let server = try FlagServer(document: .seedExample, configuration: .init(maxBodyBytes: 1_024))
        defer { server.stop() }
        let cases: [(String, Int)] = [
            ("Transfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n", 400),
            ("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\nhello", 400),
            ("Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501),
            ("Transfer-Encoding: gzip\r\n\r\nhello", 400),
            // Refused at the size line, before its data is sent.
            ("Transfer-Encoding: chunked\r\n\r\n401\r\n", 413),
        ]
        for (fields, status) in cases {
            // A request after the refused one is never answered: the connection closes.
            let text = try Self.exchange(server, Self.post + fields + "GET /flags HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(text.hasPrefix("HTTP/1.1 \(status) "), "\(fields.debugDescription): \(text)")
            #expect(text.components(separatedBy: "HTTP/1.1 ").count == 2, "\(fields.debugDescription): \(text)")
            #expect(text.contains("Connection: close"), "\(fields.debugDescription)")
        }
        let old = try Self.exchange(
            server, Self.post.replacingOccurrences(of: "HTTP/1.1", with: "HTTP/1.0") + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        #expect(old.hasPrefix("HTTP/1.1 400 "), "\(old)")
    }

    @Test func aClientWaitingToSendAChunkedBodyIsToldToGoOn() throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let connection = try #require(RawConnection(port: server.port))
        connection.send(Self.post + "Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n")
        #expect(connection.status() == 100)
        #expect(connection.receiveSome(timeout: 2_000) == Array("\r\n".utf8), "the interim answer's empty line")
        connection.send(Self.chunked(Self.context, size: 8))
        #expect(connection.status() == 200)
    }

    @Test func aChunkedBodySentAlongNeedsNoInterimAnswer() throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let connection = try #require(RawConnection(port: server.port))
        connection.send(Self.post + "Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n" + Self.chunked(Self.context, size: 8))
        #expect(connection.status() == 200)
    }

    @Test func optionsAsteriskAsksAboutTheServer() throws {
        guard case .success(let head) = HTTPRequestHead.parse(ArraySlice(HTTPFramingTests.bytes("OPTIONS * HTTP/1.1\r\nHost: x"))) else {
            Issue.record("OPTIONS * refused")
            return
        }
        #expect(head.path == "*" && head.query.isEmpty)
        for method in ["GET", "POST", "HEAD"] {
            guard case .failure(let rejection) = HTTPRequestHead.parse(ArraySlice(HTTPFramingTests.bytes("\(method) * HTTP/1.1\r\nHost: x"))) else {
                Issue.record("\(method) * accepted")
                continue
            }
            #expect(rejection.status == 400)
        }
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        // Answered without content, and the connection stays open for the next request.
        let text = try Self.exchange(
            server, "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n" + "GET /flags/venue-1.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(text.hasPrefix("HTTP/1.1 200 "), "\(text)")
        let heads = OriginServerRulesTests.heads(text)
        #expect(heads.count == 2, "\(text)")
        #expect(heads.first?["allow"] == Route.serverMethods)
        #expect(heads.first?["content-length"] == "0")
        #expect(text.components(separatedBy: "HTTP/1.1 200 ").count == 3)
        #expect(server.requests.contains { $0.route == "OPTIONS *" })
    }

    @Test func bareLineFeedsAndLeadingEmptyLinesAreAnsweredAtOnce() throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let started = ContinuousClock.now
        // The whole head in bare LFs, then CRLFs before a request line (some clients send one
        // after a body), then both mixed; each answered, none waits for the request timeout.
        let text = try Self.exchange(
            server,
            "GET /flags/venue-1.json HTTP/1.1\nHost: x\n\n" + "\r\n\r\nGET /flags/venue-1.json HTTP/1.1\r\nHost: x\r\n\r\n"
                + "\nGET /flags/venue-1.json HTTP/1.1\r\nHost: x\nConnection: close\r\n\n")
        #expect(text.components(separatedBy: "HTTP/1.1 200 ").count == 4, "\(text)")
        #expect(started.duration(to: .now) < FlagServer.Configuration().requestTimeout, "answered, not timed out")
    }

    /// A head whose lines end in a bare CR never ends; it is refused when the CR is seen, not
    /// after the request timeout (RFC 9112 §2.2: a bare CR is invalid).
    @Test func aBareCRInTheHeadIsRefusedAtOnce() throws {
        #expect(HTTPFraming.hasBareCR(in: Array("GET / HTTP/1.1\rHost".utf8)))
        #expect(!HTTPFraming.hasBareCR(in: Array("GET / HTTP/1.1\r\nHost: x\r".utf8)), "a CR at the end may begin a CRLF")
        #expect(!HTTPFraming.hasBareCR(in: Array("GET / HTTP/1.1\r\nHost: x\r\n".utf8)))
        let server = try FlagServer(document: .seedExample, configuration: .init(requestTimeout: .seconds(600)))
        defer { server.stop() }
        let connection = try #require(RawConnection(port: server.port))
        connection.send("GET /flags/venue-1.json HTTP/1.1\rHost: x\rConnection: close\r\r")
        // Answered long before the request timeout (which would be a 408, not a 400).
        #expect(connection.status(timeout: 60_000) == 400)
    }
}
