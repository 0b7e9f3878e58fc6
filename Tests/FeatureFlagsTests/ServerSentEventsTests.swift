import Foundation
import Testing
import TestSupport
@testable import FeatureFlags

/// The event-stream parser against the WHATWG HTML standard's interpretation rules, the
/// standard's own examples first.
@Suite("Server-sent events parser")
struct ServerSentEventsTests {
    func parse(_ text: String, _ parser: inout EventStreamParser) throws -> [ServerSentEvent] {
        try parser.feed(Array(text.utf8))
    }

    func parse(_ text: String) throws -> [ServerSentEvent] {
        var parser = EventStreamParser()
        return try parse(text, &parser)
    }

    @Test func dataLinesJoinWithLineFeeds() throws {
        #expect(try parse("data: YHOO\ndata: +2\ndata: 10\n\n") == [ServerSentEvent(data: "YHOO\n+2\n10")])
    }

    @Test func commentsIDsAndOneLeadingSpace() throws {
        var parser = EventStreamParser()
        let events = try parse(": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n", &parser)
        #expect(events == [
            ServerSentEvent(data: "first event", lastEventID: "1"),
            // `id` with no value sets the last event ID to the empty string.
            ServerSentEvent(data: "second event", lastEventID: ""),
            // Only one leading space is dropped.
            ServerSentEvent(data: " third event", lastEventID: ""),
        ])
    }

    @Test func emptyDataDispatchesButNoDataDoesNotAndAnUnfinishedEventNever() throws {
        #expect(try parse("data\n\ndata\ndata\n\ndata:") == [ServerSentEvent(data: ""), ServerSentEvent(data: "\n")])
        #expect(try parse("event: add\n\n").isEmpty)
        #expect(try parse("data: never finished\n").isEmpty)
    }

    @Test func aSpaceAfterTheColonIsOptional() throws {
        #expect(try parse("data:test\n\ndata: test\n\n") == [ServerSentEvent(data: "test"), ServerSentEvent(data: "test")])
    }

    @Test func eventTypesApplyToOneEvent() throws {
        #expect(try parse("event: add\ndata: 73857293\n\ndata: plain\n\n") == [
            ServerSentEvent(type: "add", data: "73857293"), ServerSentEvent(type: "message", data: "plain"),
        ])
    }

    @Test func theLastEventIDPersistsAcrossEventsAndIgnoresNUL() throws {
        var parser = EventStreamParser()
        #expect(try parse("id: 5\n\n", &parser).isEmpty)
        #expect(parser.lastEventID == "5")
        #expect(try parse("data: x\n\n", &parser) == [ServerSentEvent(data: "x", lastEventID: "5")])
        #expect(try parser.feed(Array("id: a".utf8) + [0] + Array("b\ndata: y\n\n".utf8)) == [ServerSentEvent(data: "y", lastEventID: "5")])
    }

    @Test func anIDTakesEffectAtTheNextEmptyLineOnly() throws {
        // The standard's last event ID buffer becomes the stream's last event ID when an event
        // is dispatched (an empty line, with or without data): a stream that ends after an
        // `id:` line without one is resumed with the ID before it.
        var parser = EventStreamParser(lastEventID: "4")
        #expect(try parse("id: 5\ndata: x\n", &parser).isEmpty)
        #expect(parser.lastEventID == "4", "not dispatched yet")
        #expect(try parse("\n", &parser) == [ServerSentEvent(data: "x", lastEventID: "5")])
        #expect(parser.lastEventID == "5")
        #expect(try parse("id: 6\n", &parser).isEmpty)
        #expect(parser.lastEventID == "5", "an id: the stream ended after")
        // An empty `id:` clears it, at the empty line.
        #expect(try parse("id\n\n", &parser).isEmpty)
        #expect(parser.lastEventID == "")
    }

    @Test func theNextConnectionKeepsTheIDAndTheReconnectionTime() throws {
        // The standard keeps these for the event source, across connections; a partial line
        // or event of the connection that ended is discarded, its `id:` line with it.
        var parser = EventStreamParser()
        #expect(try parse("retry: 2500\nid: 7\ndata: x\n\nid: 8\ndata: partial", &parser).count == 1)
        var next = parser.forNextConnection()
        #expect(next.lastEventID == "7" && next.retry == .milliseconds(2_500))
        // The first event of the new connection has no id: it carries the stream's ID (7), not
        // the 8 of an event never delivered, and the reconnection after it resumes from 7.
        #expect(try parse("data: y\n\n", &next) == [ServerSentEvent(data: "y", lastEventID: "7")])
        #expect(next.lastEventID == "7")
        #expect(next.forNextConnection().lastEventID == "7")
        // An id on the new connection takes over as before.
        #expect(try parse("id: 9\ndata: w\n\n", &next) == [ServerSentEvent(data: "w", lastEventID: "9")])
        // A byte-order mark is dropped again at the start of the new connection.
        var third = next.forNextConnection()
        #expect(try third.feed([0xEF, 0xBB, 0xBF] + Array("data: z\n\n".utf8)) == [ServerSentEvent(data: "z", lastEventID: "9")])
    }

    @Test func retryTakesDigitsOnly() throws {
        var parser = EventStreamParser()
        _ = try parse("retry: 1500\n", &parser)
        #expect(parser.retry == .milliseconds(1_500))
        for ignored in ["retry: 15x\n", "retry:\n", "retry: -1\n", "retry: 1.5\n"] {
            _ = try parse(ignored, &parser)
            #expect(parser.retry == .milliseconds(1_500), "\(ignored)")
        }
        _ = try parse("retry: 99999999999999999999999\n", &parser)
        #expect(parser.retry.map { $0 > .seconds(86_400 * 365) } == true)
    }

    @Test func everyLineEndingAndEndingsSplitAcrossPieces() throws {
        let expected = [ServerSentEvent(data: "a\nb"), ServerSentEvent(data: "c")]
        for text in ["data: a\ndata: b\n\ndata: c\n\n", "data: a\rdata: b\r\rdata: c\r\r", "data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n"] {
            #expect(try parse(text) == expected, "\(text.debugDescription)")
            // A CR ending one piece and an LF starting the next are one line end.
            var parser = EventStreamParser()
            var events: [ServerSentEvent] = []
            for byte in text.utf8 { events += try parser.feed([byte]) }
            #expect(events == expected, "byte by byte: \(text.debugDescription)")
        }
    }

    @Test func anySplitGivesTheSameEvents() throws {
        let text = Array(
            "\u{FEFF}: hello\r\nevent: message\nid: evt-1\nretry: 2000\ndata: {\"type\":\"refetchEvaluation\"}\r\n\r\nunknown: field\ndata\r\rdata: é\n\n"
                .utf8)
        var reference = EventStreamParser()
        let expected = try reference.feed(text)
        #expect(expected.count == 3)
        var random = SplitMix(seed: 7)
        for _ in 0..<300 {
            var parser = EventStreamParser()
            var events: [ServerSentEvent] = []
            var start = 0
            while start < text.count {
                let end = min(text.count, start + Int(random.next() % 7))
                events += try parser.feed(text[start..<end])
                start = end
            }
            #expect(events == expected)
            #expect(parser.lastEventID == reference.lastEventID && parser.retry == reference.retry)
        }
    }

    @Test func oneLeadingBOMIsDroppedEvenInPieces() throws {
        var parser = EventStreamParser()
        var events = try parser.feed([0xEF])
        events += try parser.feed([0xBB, 0xBF] + Array("data: x\n\n".utf8))
        #expect(events == [ServerSentEvent(data: "x")])
        // A second BOM is part of a field name: an unknown field, ignored.
        #expect(try parse("\u{FEFF}\u{FEFF}data: y\n\n").isEmpty)
        // Bytes that only start like a BOM are kept.
        #expect(try EventStreamParser().feedAll([0xEF, 0xBB] + Array("data: z\n\n".utf8)).isEmpty)
    }

    @Test func invalidUTF8IsReplacedNotFatal() throws {
        var parser = EventStreamParser()
        let events = try parser.feed(Array("data: a".utf8) + [0xFF, 0xC3] + Array("b\n\n".utf8))
        #expect(events == [ServerSentEvent(data: "a\u{FFFD}\u{FFFD}b")])
    }

    @Test func commentsAreNoEvents() throws {
        // A stream's signs of life are its bytes (`ChangeStream`'s heartbeat test); comments dispatch nothing.
        var parser = EventStreamParser()
        #expect(try parse(":\n: keep-alive\n", &parser).isEmpty)
    }

    @Test func aLineOrAnEventBeyondTheLimitIsAnError() throws {
        var long = EventStreamParser(maxEventBytes: 100)
        #expect(throws: EventStreamParser.Overflow(limit: 100)) { try long.feed(Array(("data: " + String(repeating: "x", count: 200)).utf8)) }
        var many = EventStreamParser(maxEventBytes: 100)
        #expect(throws: EventStreamParser.Overflow(limit: 100)) {
            try many.feed(Array(String(repeating: "data: 0123456789\n", count: 20).utf8))
        }
        // Within the limit, lines of any number are fine.
        var fine = EventStreamParser(maxEventBytes: 100)
        #expect(try fine.feed(Array(String(repeating: ": comment\n", count: 1_000).utf8)).isEmpty)
    }
}

extension EventStreamParser {
    /// Feeds `bytes` into a copy and returns the events (for expressions).
    func feedAll(_ bytes: [UInt8]) throws -> [ServerSentEvent] {
        var copy = self
        return try copy.feed(bytes)
    }
}
