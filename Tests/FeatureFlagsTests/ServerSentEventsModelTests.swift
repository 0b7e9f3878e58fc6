import Foundation
import Testing
import TestSupport
@testable import FeatureFlags

/// Random event streams written as the WHATWG standard allows them — CRLF, LF or CR line ends,
/// a leading BOM, comments, unknown fields, `field:value` with or without the one space,
/// values that themselves start with a space or hold colons, `data` over several lines,
/// events without data, `id` and `retry` anywhere in an event — fed in random pieces, against
/// the events the standard's interpretation dispatches for them. Deterministic: each seed is
/// one stream.
@Suite("Server-sent events against a model")
struct ServerSentEventsModelTests {
    /// A field value: no CR, LF or NUL (they cannot be written), anything else.
    static func text(_ rng: inout SplitMix) -> String {
        let pieces = ["a", "Z", "0", " ", ":", "é", "日", "🚀", "{\"k\":1}", "\t", "data", "id", "\u{FEFF}"]
        return (0..<Int.random(in: 0...5, using: &rng)).map { _ in pieces.randomElement(using: &rng) ?? "" }.joined()
    }

    /// A field line: `name:value` with the one optional space the parser drops (a value that
    /// starts with a space keeps it only when the separating space is written).
    static func line(_ name: String, _ value: String, _ rng: inout SplitMix) -> String {
        if value.isEmpty, Int.random(in: 0..<3, using: &rng) == 0 { return name }  // a field with no colon: empty value
        if value.hasPrefix(" ") || Bool.random(using: &rng) { return name + ": " + value }
        return name + ":" + value
    }

    @Test func randomStreamsDispatchWhatTheStandardSays() async throws {
        // Off the global executor's threads: loopback tests beside it need them.
        try await blocking {
            var failures: [String] = []
            for seed in UInt64(1)...2_000 {
                var rng = SplitMix(seed: seed)
                var lines: [String] = []
                var expected: [ServerSentEvent] = []
                var lastEventID = ""
                var retry: Duration?
                for _ in 0..<Int.random(in: 0...6, using: &rng) {
                    var type: String?
                    var data: [String] = []
                    var id: String?
                    for _ in 0..<Int.random(in: 0...6, using: &rng) {
                        switch Int.random(in: 0..<7, using: &rng) {
                        case 0:
                            let value = Self.text(&rng)
                            type = value
                            lines.append(Self.line("event", value, &rng))
                        case 1, 2:
                            let value = Self.text(&rng)
                            data.append(value)
                            lines.append(Self.line("data", value, &rng))
                        case 3:
                            let value = Self.text(&rng)
                            id = value
                            lines.append(Self.line("id", value, &rng))
                        case 4:
                            let value = Int.random(in: 0...100_000, using: &rng)
                            retry = .milliseconds(value)
                            lines.append(Self.line("retry", String(value), &rng))
                        case 5:
                            lines.append(":" + Self.text(&rng))  // a comment
                        default:
                            lines.append(Self.line(["unknown", "Data", "event ", "ids"].randomElement(using: &rng) ?? "x", Self.text(&rng), &rng))
                        }
                    }
                    lines.append("")
                    if let id { lastEventID = id }
                    if !data.isEmpty {
                        // An empty `event:` value leaves the type `message`, like none at all.
                        let dispatched = type.flatMap { $0.isEmpty ? nil : $0 } ?? "message"
                        expected.append(ServerSentEvent(type: dispatched, data: data.joined(separator: "\n"), lastEventID: lastEventID))
                    }
                }
                var bytes: [UInt8] = Bool.random(using: &rng) ? [0xEF, 0xBB, 0xBF] : []
                var endedWithCR = false
                for line in lines {
                    bytes += Array(line.utf8)
                    // After a CR, an empty line cannot end with a lone LF: CR LF is one line end.
                    let ends: [[UInt8]] = endedWithCR && line.isEmpty ? [[0x0D, 0x0A], [0x0D]] : [[0x0D, 0x0A], [0x0A], [0x0D]]
                    let end = ends.randomElement(using: &rng) ?? [0x0A]
                    bytes += end
                    endedWithCR = end == [0x0D]
                }
                var parser = EventStreamParser()
                var events: [ServerSentEvent] = []
                var start = 0
                while start < bytes.count {
                    let end = min(bytes.count, start + Int.random(in: 1...9, using: &rng))
                    events += try parser.feed(bytes[start..<end])
                    start = end
                }
                if events != expected || parser.lastEventID != lastEventID || parser.retry != retry {
                    failures.append("seed \(seed): \(String(decoding: bytes, as: UTF8.self).debugDescription) gave \(events), expected \(expected); id \(parser.lastEventID) / \(lastEventID), retry \(String(describing: parser.retry)) / \(String(describing: retry))")
                }
                if failures.count >= 3 { break }
            }
            #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        }
    }
}
