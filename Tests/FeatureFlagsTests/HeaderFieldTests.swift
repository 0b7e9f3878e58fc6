import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FlagServer

/// Header fields a request would send as something else — a value with a line break, a name
/// that is no token — are refused before anything is sent, naming the field, never its value.
@Suite("Header fields")
struct HeaderFieldTests {
    @Test(arguments: ["Bearer s3cret\n", "Bearer s3cret\r\nX-Injected: yes", "Bearer \u{0}s3cret", "Bearer s3cret\u{7F}"])
    func aValueWithAControlCharacterIsRefusedAndNothingIsSent(value: String) async throws {
        let (server, fetcher, _) = try makeServerAndFetcher(headers: ["Authorization": value])
        defer { server.stop(); fetcher.shutdown() }
        let error = try #require(await fetchError(fetcher, auraPersonal))
        #expect(error.kind == .invalidRequest)
        #expect(error.description.contains("\"Authorization\"") && error.description.contains("its value holds a line break"))
        #expect(!error.description.contains("s3cret"), "the value may be a secret")
        #expect(!error.isFatal, "a configuration error, reported at each attempt; nothing was sent")
        #expect(server.requestCount == 0)
    }

    @Test func anEndpointsOwnFieldWithABadNameIsRefusedToo() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let fetcher = FlagFetcher(endpoint: .json(post: server.flagsURL, headers: ["X API Key": "k"]), configuration: .loopback)
        defer { fetcher.shutdown() }
        let error = try #require(await fetchError(fetcher, auraPersonal))
        #expect(error.kind == .invalidRequest && error.description.contains("\"X API Key\""))
        #expect(error.description.contains("its name is not a token"))
        #expect(server.requestCount == 0)
    }

    @Test func tabsAndTextBeyondASCIIAreSentAsWritten() async throws {
        let (server, fetcher, _) = try makeServerAndFetcher(headers: ["X-Team": "Zürich\tops", "Authorization": "Bearer t0ken"])
        defer { server.stop(); fetcher.shutdown() }
        _ = try #require(fetched(await fetcher.fetch(auraPersonal)))
        #expect(server.requests.first?.headers["authorization"] == "Bearer t0ken")
    }

    @Test func theRuleIsRFC9110s() {
        for name in ["X-API-Key", "a", "!#$%&'*+-.^_`|~09AZaz"] { #expect(HeaderFieldCheck.isToken(name), "\(name)") }
        for name in ["", "X API", "a:b", "é", "a\n", "(x)"] { #expect(!HeaderFieldCheck.isToken(name), "\(name)") }
        for value in ["", "Bearer x", "a\tb", "Zürich", "\u{80}"] { #expect(HeaderFieldCheck.isFieldValue(value), "\(value)") }
        for value in ["a\r", "a\n", "\u{0}", "\u{1B}[2J", "\u{7F}"] { #expect(!HeaderFieldCheck.isFieldValue(value), "\(value)") }
        #expect(HeaderFieldCheck.firstMalformed(["b": "x\n", "a": "y\n", "ok": "1"]) == "a", "the first by name, every time")
        #expect(HeaderFieldCheck.firstMalformed(["ok": "1"]) == nil)
    }
}
