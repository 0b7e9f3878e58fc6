import FeatureFlagsServices
import Foundation
import Testing
import TestSupport
@testable import FeatureFlags

/// `eventStreams` as OFREP ADR-0008 and the project's JSON document define it: what is
/// read, what is skipped, and what never leaks.
@Suite("Event stream advertisements")
struct EventStreamLinkTests {
    static let base = URL(string: "https://flags.example.com:8443/api")!

    static func links(_ json: String, base: URL? = base) -> (links: [EventStreamLink], skipped: Int) {
        EventStreamLink.list(from: try? FlagJSON.parse(Array(json.utf8)), base: base)
    }

    @Test func theURLFormIsReadWithItsInactivityDelay() {
        let read = Self.links(#"[{"type":"sse","url":"https://sse.example.com/s?channel=env_1&token=secret","inactivityDelaySec":30}]"#)
        #expect(read.skipped == 0)
        #expect(read.links.first?.url.absoluteString == "https://sse.example.com/s?channel=env_1&token=secret")
        #expect(read.links.first?.inactivityDelay == .seconds(30))
        #expect(read.links.first?.sameOrigin == false, "credentials stay with the flag service's own origin")
        #expect(read.links.first?.description == "https://sse.example.com/s", "the query may hold a token: never shown")
    }

    @Test func theEndpointFormResolvesAgainstTheOriginItCameFrom() {
        let own = Self.links(#"[{"type":"sse","endpoint":{"requestUri":"/events?c=1"}}]"#)
        #expect(own.links.first?.url.absoluteString == "https://flags.example.com:8443/events?c=1")
        #expect(own.links.first?.inactivityDelay == .seconds(120), "OFREP's default")
        #expect(own.links.first?.sameOrigin == true)
        let elsewhere = Self.links(#"[{"type":"sse","endpoint":{"origin":"https://push.example.net","requestUri":"/s"}}]"#)
        #expect(elsewhere.links.first?.url.absoluteString == "https://push.example.net/s")
        #expect(elsewhere.links.first?.sameOrigin == false)
    }

    @Test func unknownTypesAndMalformedEntriesAreSkippedNotFatal() {
        let read = Self.links(
            #"""
            [{"type":"websocket","url":"wss://x.example.com"},
             {"type":"sse"},
             {"type":"sse","url":"https://a.example.com/s","endpoint":{"requestUri":"/s"}},
             {"type":"sse","url":"not a url"},
             {"type":"sse","url":"ftp://a.example.com/s"},
             {"type":"sse","endpoint":{"requestUri":"events"}},
             {"type":"sse","endpoint":{"requestUri":"//evil.example.com/x"}},
             {"type":"sse","endpoint":{"origin":"https://a.example.com/path","requestUri":"/s"}},
             {"type":"sse","endpoint":{"origin":42,"requestUri":"/s"}},
             "sse", 7, null,
             {"type":"sse","url":"https://ok.example.com/s","inactivityDelaySec":0},
             {"type":"sse","url":"https://ok.example.com/s","inactivityDelaySec":0}]
            """#)
        #expect(read.skipped == 12)
        #expect(read.links.count == 1, "duplicates collapse")
        #expect(read.links.first?.inactivityDelay == .seconds(120), "below OFREP's minimum of 1: the default")
        #expect(Self.links(#"{"type":"sse"}"#).skipped == 1)
        #expect(Self.links("null").links.isEmpty)
        #expect(Self.links(#"[{"type":"sse","endpoint":{"requestUri":"/s"}}]"#, base: nil).skipped == 1)
    }

    @Test func ofrepAndJSONAnswersCarryTheirStreams() throws {
        let context = EvaluationContext(targetingKey: "u")
        let ofrep = FlagEndpoint.ofrep(baseURL: Self.base)
        let body = Array(#"{"flags":[{"key":"a","value":true}],"eventStreams":[{"type":"sse","endpoint":{"requestUri":"/events"}}]}"#.utf8)
        let fromOFREP = try ofrep.decode(FlagResponse(status: 200, body: body), for: context)
        guard let flags = fromOFREP.flags else {
            Issue.record("expected flags")
            return
        }
        #expect(flags["a"]?.value == true)
        #expect(fromOFREP.streams.map(\.url.absoluteString) == ["https://flags.example.com:8443/events"])

        let json = FlagEndpoint.json(urlTemplate: "https://cdn.example.com/flags/{targetingKey}.json")
        let document = Array(#"{"flags":{"a":1},"eventStreams":[{"type":"sse","endpoint":{"requestUri":"/events"}},{"type":"x"}]}"#.utf8)
        let fromJSON = try json.decode(FlagResponse(status: 200, body: document), for: context)
        guard fromJSON.flags != nil else {
            Issue.record("expected flags")
            return
        }
        #expect(fromJSON.streams.map(\.url.absoluteString) == ["https://cdn.example.com/events"])
        // A broken advertisement never costs the flags.
        let broken = Array(#"{"flags":{"a":1},"eventStreams":"nope"}"#.utf8)
        let fromBroken = try json.decode(FlagResponse(status: 200, body: broken), for: context)
        guard let kept = fromBroken.flags else {
            Issue.record("expected flags")
            return
        }
        #expect(kept["a"]?.value == 1 && fromBroken.streams.isEmpty)
    }

    /// An answer as large as the fetcher accepts (1 MiB) holds about 25,000 entries. Reading them
    /// all compared each with every one kept (a 25,000-entry answer took 97 s in a debug build),
    /// opened a stream each, and wrote a snapshot the store could not read back (it reads at most
    /// 64 links). The first eight distinct streams are kept; the rest are skipped unread.
    @Test func anAnswerKeepsAtMostEightStreams() async throws {
        // Off the global executor's threads: loopback tests beside it need them.
        try await blocking {
            let entries = (0..<25_000).map { #"{"type":"sse","url":"https://push.example.com/s\#($0)"}"# }
            let read = Self.links("[" + entries.joined(separator: ",") + "]")
            #expect(read.links.count == EventStreamLink.maximumPerAnswer && EventStreamLink.maximumPerAnswer == 8)
            #expect(read.links.prefix(9).map(\.url.path) == (0..<8).map { "/s\($0)" })
            #expect(read.skipped == 25_000 - 8)
            // Duplicates and malformed entries before the eighth stream take no place (a duplicate
            // collapses, uncounted).
            let mixed = ["{}", #"{"type":"sse","url":"https://push.example.com/s0"}"#] + entries
            let kept = Self.links("[" + mixed.joined(separator: ",") + "]")
            #expect(kept.links.prefix(9).map(\.url.path) == (0..<8).map { "/s\($0)" })
            #expect(kept.skipped == 1 + (25_002 - 10))
            // Through the JSON endpoint, as a fetch reads it.
            let json = FlagEndpoint.json(urlTemplate: "https://cdn.example.com/flags/{targetingKey}.json")
            let document = Array((#"{"flags":{"a":1},"eventStreams":["# + entries.joined(separator: ",") + "]}").utf8)
            let answer = try json.decode(FlagResponse(status: 200, body: document), for: EvaluationContext(targetingKey: "u"))
            #expect(answer.streams.count == 8 && answer.flags?["a"]?.value == 1)
        }
    }

    @Test func refetchMetadataGoesInTheQueryEscaped() {
        let hint = RefetchHint(etag: "\"r7\"", lastModified: "2026-02-20T21:28:18Z", endpoint: nil)
        let url = hint.apply(to: URL(string: "https://flags.example.com/ofrep/v1/evaluate/flags?x=1")!)
        #expect(url.absoluteString == "https://flags.example.com/ofrep/v1/evaluate/flags?x=1&flagConfigEtag=%22r7%22&flagConfigLastModified=2026-02-20T21%3A28%3A18Z")
        let none = RefetchHint(etag: nil, lastModified: nil, endpoint: nil)
        #expect(none.apply(to: Self.base) == Self.base)
    }
}
