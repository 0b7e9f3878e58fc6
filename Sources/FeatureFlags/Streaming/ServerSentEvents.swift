/// Parses `text/event-stream` in pieces of any size per WHATWG HTML "Interpreting an event stream". Deviations:
/// a line or data over `maxEventBytes` throws ``Overflow``; a connection's last event ID buffer starts
/// as the stream's last event ID (as browsers do), not empty, so a reconnection keeps the ID.
internal struct EventStreamParser: Sendable {
    /// A line or an event's data exceeded the parser's limit.
    internal struct Overflow: Error, Equatable, CustomStringConvertible {
        package let limit: Int
        package var description: String { "an event stream line or event exceeded \(limit) bytes" }
    }

    /// The largest line, and the largest event data, accepted.
    package let maxEventBytes: Int
    /// The stream's last event ID, sent back as `Last-Event-ID` on reconnection.
    package private(set) var lastEventID = ""
    /// The last event ID buffer, set by `id:` lines.
    private var idBuffer: String
    /// The reconnection time the stream asked for with `retry:`, if it did.
    package private(set) var retry: Duration?

    private var line: [UInt8] = []
    private var data: [UInt8] = []
    private var eventType = ""
    private var atStart = true
    private var afterCR = false

    /// A parser; `lastEventID` carries the ID of an earlier connection of the same stream.
    package init(maxEventBytes: Int = 64 << 10, lastEventID: String = "") {
        self.maxEventBytes = maxEventBytes
        self.lastEventID = lastEventID
        self.idBuffer = lastEventID
    }

    /// A parser for the next connection, keeping last event ID and `retry`; an undelivered event's `id:` is dropped.
    package func forNextConnection() -> EventStreamParser {
        var next = EventStreamParser(maxEventBytes: maxEventBytes, lastEventID: lastEventID)
        next.retry = retry
        return next
    }

    /// Feeds the next bytes; returns the events they completed, in order.
    package mutating func feed(_ bytes: some Sequence<UInt8>) throws(Overflow) -> [ServerSentEvent] {
        var events: [ServerSentEvent] = []
        for byte in bytes {
            if atStart {
                // A BOM is dropped once, at the very start; its bytes may come in separate pieces.
                line.append(byte)
                if line.count <= 3, Array(line) == Array([0xEF, 0xBB, 0xBF].prefix(line.count)) {
                    if line.count == 3 {
                        line.removeAll()
                        atStart = false
                    }
                    continue
                }
                atStart = false
                let pending = line
                line.removeAll()
                for pendingByte in pending { try take(pendingByte, into: &events) }
                continue
            }
            try take(byte, into: &events)
        }
        return events
    }

    private mutating func take(_ byte: UInt8, into events: inout [ServerSentEvent]) throws(Overflow) {
        switch byte {
        case 0x0A:
            if afterCR {
                afterCR = false  // the LF of a CRLF: the line already ended at the CR
                return
            }
            try endLine(into: &events)
        case 0x0D:
            afterCR = true
            try endLine(into: &events)
        default:
            afterCR = false
            guard line.count < maxEventBytes else { throw Overflow(limit: maxEventBytes) }
            line.append(byte)
        }
    }

    private mutating func endLine(into events: inout [ServerSentEvent]) throws(Overflow) {
        defer { line.removeAll(keepingCapacity: true) }
        if line.isEmpty {
            dispatch(into: &events)
            return
        }
        if line[0] == UInt8(ascii: ":") { return }
        let field: ArraySlice<UInt8>
        var value: ArraySlice<UInt8>
        if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            field = line[..<colon]
            value = line[(colon + 1)...]
            if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        } else {
            field = line[...]
            value = []
        }
        switch String(decoding: field, as: UTF8.self) {
        case "event":
            eventType = String(decoding: value, as: UTF8.self)
        case "data":
            guard data.count + value.count + 1 <= maxEventBytes else { throw Overflow(limit: maxEventBytes) }
            data.append(contentsOf: value)
            data.append(0x0A)   // every data line ends so: data is empty exactly when none came
        case "id":
            if !value.contains(0) { idBuffer = String(decoding: value, as: UTF8.self) }
        case "retry":
            if !value.isEmpty, value.allSatisfy({ (0x30...0x39).contains($0) }) {
                // Digits beyond what fits are a very long time, not an error.
                retry = .milliseconds(Int64(String(decoding: value, as: UTF8.self)) ?? Int64.max / 1_000_000)
            }
        default:
            break
        }
    }

    private mutating func dispatch(into events: inout [ServerSentEvent]) {
        defer {
            data.removeAll(keepingCapacity: true)
            eventType = ""
        }
        lastEventID = idBuffer
        guard !data.isEmpty else { return }
        if data.last == 0x0A { data.removeLast() }
        events.append(
            ServerSentEvent(
                type: eventType.isEmpty ? "message" : eventType, data: String(decoding: data, as: UTF8.self),
                lastEventID: lastEventID))
    }
}
