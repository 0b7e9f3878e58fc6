import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
@testable import FlagServer

/// The server's request parsing: any request target and any head give an answer, never a
/// crash (the query `?=` used to kill the process), and connections follow RFC 9112 §9.3.
@Suite("HTTP requests")
struct HTTPRequestTests {
    func head(_ text: String) -> Result<HTTPRequestHead, HTTPRequestHead.Rejection> {
        HTTPRequestHead.parse(ArraySlice(Array(text.utf8)))
    }

    @Test func queriesOfEveryShapeParse() throws {
        let cases: [(String, [String: String])] = [
            ("/flags?=", [:]), ("/flags?==", [:]), ("/flags?&&", [:]), ("/flags?=x", [:]), ("/flags?", [:]),
            ("/flags?a", ["a": ""]), ("/flags?a=", ["a": ""]), ("/flags?a==b", ["a": "=b"]), ("/flags?a=1&a=2", ["a": "2"]),
            ("/flags?a=%ZZ", ["a": "%ZZ"]), ("/flags?%=1", ["%": "1"]), ("/flags?x=a+b%20c", ["x": "a b c"]),
        ]
        for (target, query) in cases {
            let parsed = try #require(HTTPRequestHead.splitTarget(target), "\(target)")
            #expect(parsed.path == "/flags", "\(target)")
            #expect(parsed.query == query, "\(target)")
        }
        #expect(HTTPRequestHead.splitTarget("http://host:8080/flags?a=1")?.query == ["a": "1"])
        #expect(HTTPRequestHead.splitTarget("http://host")?.path == "/")
        // The scheme in any case; an empty path before a query is `/`.
        #expect(HTTPRequestHead.splitTarget("HTTP://host/flags?a=1")?.path == "/flags")
        #expect(HTTPRequestHead.splitTarget("Https://host:8443/flags")?.path == "/flags")
        let noPath = HTTPRequestHead.splitTarget("http://host:8080?a=1")
        #expect(noPath?.path == "/" && noPath?.query == ["a": "1"])
        for bad in ["flags", "*", "", "?a=1", "ftp://x/y"] { #expect(HTTPRequestHead.splitTarget(bad) == nil, "\(bad)") }
    }

    @Test func malformedHeadsAreRejectedWithAStatus() {
        let cases: [(String, Int)] = [
            ("", 400), ("GET", 400), ("GET /flags", 400), ("GET  /flags HTTP/1.1", 400), ("GET /flags HTTP/1.1 extra", 400),
            ("GET /flags HTTP/2.0", 505), ("GET /flags HTTX/1.1", 400), ("G(T /flags HTTP/1.1", 400),
            // RFC 9112 §2.3: "HTTP/" DIGIT "." DIGIT, case-sensitive; another major version is 505.
            ("GET /flags HTTP/0.9", 505), ("GET /flags HTTP/3.0", 505), ("GET /flags HTTP/1.10", 400), ("GET /flags HTTP/1", 400),
            ("GET /flags HTTP/1.x", 400), ("GET /flags http/1.1", 400), ("GET /flags HTTP/11", 400), ("GET /flags HTTP/1.1.", 400),
            ("GET /fl\u{7F}ags HTTP/1.1", 400), ("GET flags HTTP/1.1", 400),
            ("GET /flags#top HTTP/1.1\r\nHost: x", 400), ("GET http://x/flags#top HTTP/1.1\r\nHost: x", 400),
            ("GET /flags HTTP/1.1\r\nNo colon here", 400), ("GET /flags HTTP/1.1\r\n: empty name", 400),
            ("GET /flags HTTP/1.1\r\nBad Name: x", 400), ("GET /flags HTTP/1.1\r\nHost : x", 400),
            ("GET /flags HTTP/1.1\r\nHost: x\r\n folded", 400),
            // RFC 9112 §3.2: HTTP/1.1 needs one Host line; no request may have two.
            ("GET /flags HTTP/1.1", 400), ("GET /flags HTTP/1.1\r\nX-A: b", 400),
            ("GET /flags HTTP/1.1\r\nHost: a\r\nHost: b", 400), ("GET /flags HTTP/1.0\r\nHost: a\r\nhost: a", 400),
            // …nor one whose value is not uri-host [":" port] (RFC 9112 §3.2, RFC 9110 §7.2).
            ("GET /flags HTTP/1.1\r\nHost: user@x", 400), ("GET /flags HTTP/1.1\r\nHost: a b", 400),
            ("GET /flags HTTP/1.1\r\nHost: x:80a", 400), ("GET /flags HTTP/1.1\r\nHost: x:80:81", 400),
            ("GET /flags HTTP/1.1\r\nHost: x/y", 400), ("GET /flags HTTP/1.1\r\nHost: [::1", 400),
            ("GET /flags HTTP/1.1\r\nHost: []", 400), ("GET /flags HTTP/1.1\r\nHost: [::1]x", 400),
            ("GET /flags HTTP/1.1\r\nHost: héllo", 400), ("GET /flags HTTP/1.0\r\nHost: a@b", 400),
            // RFC 9110 §5.5: CR or NUL inside a field value.
            ("GET /flags HTTP/1.1\r\nHost: x\r\nX-A: a\rb", 400), ("GET /flags HTTP/1.1\r\nHost: x\r\nX-A: a\u{0}b", 400),
        ]
        for (text, status) in cases {
            guard case .failure(let rejection) = head(text) else {
                Issue.record("accepted \(text.debugDescription)")
                continue
            }
            #expect(rejection.status == status, "\(text.debugDescription): \(rejection.reason)")
        }
    }

    /// Every shape of `uri-host [":" port]` is accepted, the empty host included (RFC 9112
    /// §3.2 has a client send it when the target has no authority).
    @Test func everyValidHostIsAccepted() throws {
        for host in [
            "x", "flags.example.com", "flags.example.com:8080", "127.0.0.1:80", "[::1]", "[::1]:8080",
            "[v1.fe80::a+en1]", "", "x:", "xn--bcher-kva.example", "a%20b", "sub_domain.example~1",
        ] {
            #expect(throws: Never.self, "\(host)") { try head("GET /flags HTTP/1.1\r\nHost: \(host)").get() }
        }
    }

    @Test func aLaterMinorVersionIsReadAsHTTP11() throws {
        // RFC 9110 §2.5: a later minor version of a major version the server implements is
        // processed as the highest minor version it implements.
        let later = try head("GET /flags HTTP/1.2\r\nHost: x").get()
        #expect(later.minorVersion == 1 && later.keepAlive)
        #expect(try head("GET /flags HTTP/1.9\r\nHost: x\r\nConnection: close").get().keepAlive == false)
        // Host is required of it as of HTTP/1.1.
        guard case .failure(let rejection) = head("GET /flags HTTP/1.2") else {
            Issue.record("HTTP/1.2 without Host was accepted")
            return
        }
        #expect(rejection.status == 400)
    }

    @Test func statusLinesCarryRFC9110sReasonPhrases() {
        func statusLine(_ status: Int) -> String {
            String(decoding: HTTPResponse.head(status: status, headers: []), as: UTF8.self).components(separatedBy: "\r\n")[0]
        }
        #expect(statusLine(505) == "HTTP/1.1 505 HTTP Version Not Supported")
        #expect(statusLine(418) == "HTTP/1.1 418 ", "an unregistered status gets an empty phrase (RFC 9112 §4)")
        #expect(statusLine(422) == "HTTP/1.1 422 Unprocessable Content")
        for status in [200, 304, 400, 404, 408, 413, 414, 417, 429, 431, 500, 501, 503, 504] {
            #expect(!(HTTPResponse.reasons[status] ?? "").isEmpty, "\(status)")
        }
    }

    @Test func connectionFollowsRFC9112() throws {
        func keepAlive(_ text: String) throws -> Bool { try head(text).get().keepAlive }
        #expect(try keepAlive("GET / HTTP/1.1\r\nHost: x"))
        #expect(try !keepAlive("GET / HTTP/1.1\r\nHost: x\r\nConnection: close"))
        #expect(try !keepAlive("GET / HTTP/1.1\r\nHost: x\r\nConnection: close, TE"))
        #expect(try !keepAlive("GET / HTTP/1.1\r\nHost: x\r\nConnection: TE,Close"))
        #expect(try !keepAlive("GET / HTTP/1.1\r\nHost: x\r\nConnection: TE\r\nConnection: close"))
        #expect(try !keepAlive("GET / HTTP/1.0"))
        #expect(try keepAlive("GET / HTTP/1.0\r\nConnection: Keep-Alive"))
        #expect(try !keepAlive("GET / HTTP/1.0\r\nConnection: keep-alive, close"))
    }

    /// Over a socket: the requests that used to crash the server get an answer, and it keeps
    /// serving.
    @Test func theServerSurvivesEveryOddTarget() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        for target in ["/flags?=", "/flags?==", "/flags?&=&", "/flags?=&=", "/flags/%.json", "/flags?partner=%FF%FE", "/%00"] {
            let connection = try #require(RawConnection(port: server.port))
            connection.send("GET \(target) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let status = connection.status()
            #expect(status != nil, "no answer to \(target)")
        }
        let check = try #require(RawConnection(port: server.port))
        check.send("GET /flags?partner=auralink&plan_tier=business HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(check.status() == 200)
    }

    /// HTTP/1.0 without keep-alive is answered and closed at once, saying so — not held open
    /// until the idle timeout.
    @Test func http10ClosesAtOnceAndSaysSo() async throws {
        let server = try FlagServer(document: .seedExample, configuration: .init(idleTimeout: .seconds(30)))
        defer { server.stop() }
        for request in [
            "GET /flags?partner=auralink HTTP/1.0\r\n\r\n",
            "GET /flags?partner=auralink HTTP/1.1\r\nHost: x\r\nConnection: close, TE\r\n\r\n",
        ] {
            let connection = try #require(RawConnection(port: server.port))
            connection.send(request)
            let clock = ContinuousClock()
            let start = clock.now
            let answer = connection.receive(timeout: 3_000)  // returns when the server closes
            #expect(answer.hasPrefix("HTTP/1.1 200"), "\(request)")
            #expect(answer.contains("Connection: close"), "\(request)")
            #expect(clock.now - start < .seconds(2), "\(request) was held open")
        }
        // HTTP/1.0 asking for keep-alive: a second request on the same connection is answered.
        let kept = try #require(RawConnection(port: server.port))
        kept.send("GET /flags?partner=auralink HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        // …and the answer says the connection persists: the only way an HTTP/1.0 client knows.
        #expect(kept.status() == 200)
        #expect(kept.receive(timeout: 300).contains("\r\nConnection: keep-alive\r\n"))
        kept.send("GET /flags?partner=zenithsat HTTP/1.0\r\nConnection: close\r\n\r\n")
        #expect(kept.status() == 200)
    }
}

extension HTTPRequestTests {
    /// An answer whose body ends with the connection says `Connection: close` once, whether
    /// or not the request asked to close, and an HTTP/1.0 keep-alive request is not told
    /// the connection persists when it does not.
    @Test func aHeadNamesTheConnectionsFateOnce() throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        server.fault = .oversizedCloseDelimitedBody(bytes: 10)
        for request in [
            "GET /flags?partner=auralink HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            "GET /flags?partner=auralink HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /flags?partner=auralink HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        ] {
            let connection = try #require(RawConnection(port: server.port))
            connection.send(request)
            let answer = connection.receive(timeout: 3_000)  // returns when the server closes
            let head = answer.components(separatedBy: "\r\n\r\n")[0].lowercased()
            #expect(head.components(separatedBy: "\r\nconnection:").count == 2, "\(request.debugDescription): \(head)")
            #expect(head.contains("\r\nconnection: close"), "\(request.debugDescription)")
        }
    }
}

/// `Expect: 100-continue` (RFC 9110 §10.1.1): a client that asks waits for the 100 before it
/// sends the body — curl for a second, others for good.
@Suite("FlagServer and Expect")
struct ExpectContinueTests {
    static let body = #"{"context":{"targetingKey":"u1"}}"#
    static func head(version: String = "1.1", expect: String) -> String {
        "POST /ofrep/v1/evaluate/flags HTTP/\(version)\r\nHost: x\r\nContent-Type: application/json\r\nExpect: \(expect)\r\n"
            + "Content-Length: \(body.utf8.count)\r\n\r\n"
    }

    @Test func aClientWaitingToSendItsBodyIsToldToGoOn() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let connection = try #require(RawConnection(port: server.port))
        connection.send(Self.head(expect: "100-Continue"))
        #expect(connection.status() == 100)
        #expect(connection.receiveSome(timeout: 2_000) == Array("\r\n".utf8), "the interim answer's empty line")
        connection.send(Self.body)
        #expect(connection.status() == 200)
    }

    @Test func aBodySentAlongNeedsNoInterimAnswer() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let connection = try #require(RawConnection(port: server.port))
        connection.send(Self.head(expect: "100-continue") + Self.body)
        #expect(connection.status() == 200)
    }

    @Test func anHTTP10ExpectationIsIgnoredAndAnUnknownOneRefused() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let old = try #require(RawConnection(port: server.port))
        old.send(Self.head(version: "1.0", expect: "100-continue") + Self.body)
        #expect(old.status() == 200)
        let unknown = try #require(RawConnection(port: server.port))
        unknown.send(Self.head(expect: "something-else") + Self.body)
        #expect(unknown.status() == 417)
    }
}

/// What every origin server must do by RFC 9110: a `Date` on every answer (§6.6.1), `HEAD`
/// wherever `GET` is served (§9.1, §9.3.2), an `Allow` list on a 405 (§15.5.6).
@Suite("FlagServer and RFC 9110")
struct OriginServerRulesTests {
    /// Everything the server sends on one connection until it closes.
    static func exchange(_ server: FlagServer, _ requests: String) throws -> String {
        let connection = try #require(RawConnection(port: server.port))
        connection.send(requests)
        return connection.receive(timeout: 5_000)
    }

    /// The header fields of the answers in `text`, lower-cased names, one dictionary per answer.
    static func heads(_ text: String) -> [[String: String]] {
        text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { answer in
            var fields: [String: String] = [:]
            for line in answer.components(separatedBy: "\r\n\r\n")[0].components(separatedBy: "\r\n").dropFirst() {
                let parts = line.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                if parts.count == 2 { fields[parts[0].lowercased()] = parts[1] }
            }
            return fields
        }
    }

    @Test func theDateIsAnIMFFixdate() {
        #expect(HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(1_798_761_599) == "Thu, 31 Dec 2026 23:59:59 GMT")
        #expect(HTTPDate.format(-1) == "Wed, 31 Dec 1969 23:59:59 GMT")
        // A time whose year overflows the C library's calendar gives the epoch, not a crash.
        #expect(HTTPDate.format(Int.max) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(Int.min) == "Thu, 01 Jan 1970 00:00:00 GMT")
        let now = Date()
        let read = RetryAfter.httpDate(HTTPDate.now(), now: now)
        #expect(read.map { abs($0.timeIntervalSince(now)) < 2 } == true)
    }

    @Test func everyAnswerCarriesTheDate() throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let answers = try Self.exchange(
            server,
            "GET /flags/venue-1.json HTTP/1.1\r\nHost: x\r\n\r\n" + "GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n"
                + "PUT /flags HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" + "GET /flags HTTP/1.1\r\n\r\n")
        let heads = Self.heads(answers)
        #expect(heads.count == 4, "\(answers)")
        for head in heads {
            #expect(head["date"].flatMap { RetryAfter.httpDate($0, now: Date()) } != nil, "\(head)")
        }
    }

    @Test func headIsGetWithoutTheContent() throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let get = Self.heads(try Self.exchange(server, "GET /flags/venue-1.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
        // HEAD, then GET on the same connection: had HEAD sent content, the next answer would
        // not start where it should.
        let text = try Self.exchange(
            server,
            "HEAD /flags/venue-1.json HTTP/1.1\r\nHost: x\r\n\r\n"
                + "GET /flags/venue-1.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(text.hasPrefix("HTTP/1.1 200 "))
        let headAnswer = text.components(separatedBy: "\r\n\r\n")
        #expect(headAnswer.count >= 2 && headAnswer[1].hasPrefix("HTTP/1.1 200 "), "content after HEAD's head: \(text.prefix(400))")
        let heads = Self.heads(text)
        #expect(heads.count == 2)
        #expect(heads.first?["content-length"] == get.first?["content-length"])
        #expect(heads.first?["etag"] == get.first?["etag"])
        #expect(server.requests.contains { $0.method == "HEAD" })
        // A stream's head, then the end.
        let stream = try Self.exchange(server, "HEAD /events HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(stream.hasPrefix("HTTP/1.1 200 ") && stream.hasSuffix("\r\n\r\n"), "\(stream)")
        #expect(Self.heads(stream).first?["content-type"] == "text/event-stream")
    }

    /// A HEAD of a stream says what a GET would get: 503 when no stream would be admitted.
    @Test func aStreamsHeadIsRefusedWhereItsGetWouldBe() throws {
        let server = try FlagServer(document: .seedExample, configuration: .init(maxStreams: 0))
        defer { server.stop() }
        for path in ["/events", "/meval/eyJrZXkiOiJ1MSJ9"] {
            let get = try Self.exchange(server, "GET \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let head = try Self.exchange(server, "HEAD \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(get.hasPrefix("HTTP/1.1 503 "), "GET \(path): \(get.prefix(200))")
            #expect(head.hasPrefix("HTTP/1.1 503 "), "HEAD \(path): \(head.prefix(200))")
            #expect(head.hasSuffix("\r\n\r\n"), "HEAD \(path) sent content: \(head)")
            #expect(Self.heads(head).first?["content-length"] == Self.heads(get).first?["content-length"])
        }
    }

    @Test func a304RepeatsTheValidatorsAndDoesNotFrameContent() throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let full = Self.heads(try Self.exchange(server, "GET /flags/venue-1.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"))
        let tag = try #require(full.first?["etag"])
        // A 304, then another request on the same connection: nothing may stand between them.
        let text = try Self.exchange(
            server,
            "GET /flags/venue-1.json HTTP/1.1\r\nHost: x\r\nIf-None-Match: \(tag)\r\n\r\n"
                + "GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        #expect(text.hasPrefix("HTTP/1.1 304 "))
        #expect(text.components(separatedBy: "\r\n\r\n")[1].hasPrefix("HTTP/1.1 404 "))
        let notModified = try #require(Self.heads(text).first)
        #expect(notModified["etag"] == tag && notModified["cache-control"] == full.first?["cache-control"])
        #expect(notModified["content-length"] == nil)
    }

    @Test func a405SaysWhatIsAllowed() throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let cases = [
            ("PUT /flags", "GET, HEAD, POST"), ("POST /flags/venue-1.json", "GET, HEAD"), ("DELETE /events", "GET, HEAD"),
            ("GET /ofrep/v1/evaluate/flags", "POST"), ("POST /meval", "GET, HEAD, REPORT"), ("POST /api/frontend", "GET, HEAD"),
        ]
        for (line, allow) in cases {
            let text = try Self.exchange(server, "\(line) HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            #expect(text.hasPrefix("HTTP/1.1 405 "), "\(line)")
            #expect(Self.heads(text).first?["allow"] == allow, "\(line)")
        }
        // A method no one knows is not implemented (§9.1), whatever the path.
        for line in ["FROB /flags", "get /flags/venue-1.json"] {
            let text = try Self.exchange(server, "\(line) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            #expect(text.hasPrefix("HTTP/1.1 501 "), "\(line)")
        }
    }
}

/// The request log keeps the last requests only, so memory stays bounded.
@Suite("FlagServer request log")
struct RequestLogTests {
    @Test func theLogIsARingOfTheLastRequests() async throws {
        let server = try FlagServer(document: .seedExample, configuration: .init(maxLoggedRequests: 5))
        defer { server.stop() }
        let connection = try #require(RawConnection(port: server.port))
        let statuses = try await blocking {
            (0..<12).map { n -> Int? in
                connection.send("GET /flags?partner=auralink&n=\(n) HTTP/1.1\r\nHost: x\r\n\r\n")
                defer { _ = connection.receive(timeout: 50) }
                return connection.status()
            }
        }
        #expect(statuses.allSatisfy { $0 == 200 })
        #expect(server.requestCount == 12)
        #expect(await eventually { server.requests.allSatisfy { $0.status == 200 } })
        #expect(server.requests.map(\.index) == [7, 8, 9, 10, 11])
        server.clearLog()
        #expect(server.requestCount == 0 && server.requests.isEmpty)
        #expect(FlagServer.Configuration().maxLoggedRequests == 1_000)
        #expect(FlagServer.Configuration(maxLoggedRequests: 0).maxLoggedRequests == 1)
    }

    @Test func theRingKeepsOrderAndDropsUpdatesForEvictedRecords() {
        var log = RequestLog(capacity: 3)
        func record(_ index: Int) -> FlagServer.RequestRecord {
            FlagServer.RequestRecord(
                index: index, method: "GET", path: "/", route: "GET /flags", headers: [:], contextFingerprint: nil, fault: nil, status: nil,
                bytesSent: 0, duration: nil, requestBytes: 0, responseHeadBytes: 0)
        }
        for _ in 0..<2 { _ = log.append(record) }
        #expect(log.records.map(\.index) == [0, 1])
        for _ in 0..<5 { _ = log.append(record) }
        #expect(log.records.map(\.index) == [4, 5, 6] && log.total == 7)
        #expect(log.update(3) { $0.status = 200 } == nil, "evicted")
        #expect(log.update(5) { $0.status = 200 }?.status == 200)
        #expect(log.update(7) { $0.status = 200 } == nil, "not yet logged")
        #expect(log.records.map(\.status) == [nil, 200, nil])
    }
}
