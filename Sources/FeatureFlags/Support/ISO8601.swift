package import Foundation

/// RFC 3339 §5.6 `date-time` (`2026-11-21T14:30:00Z`): the one parser for `Retry-After` and `iso8601` values;
/// nonexistent dates are refused. Plain arithmetic (``CivilTime``), no formatter.
package enum ISO8601 {
    /// `2026-11-26T16:52:08Z` for messages and tools (whole seconds, UTC).
    package static func string(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        // Outside years 0–9999 a message shows the raw count (only a corrupt value gets there).
        guard seconds >= -62_167_219_200, seconds < 253_402_300_800 else { return "\(seconds) s after 1970" }
        let f = CivilTime.fields(Int64(seconds))
        func pad(_ n: Int, _ width: Int) -> String { String(repeating: "0", count: max(0, width - String(n).count)) + String(n) }
        return "\(pad(f.year, 4))-\(pad(f.month, 2))-\(pad(f.day, 2))T\(pad(f.hour, 2)):\(pad(f.minute, 2)):\(pad(f.second, 2))Z"
    }

    /// The instant `text` names, or nil when it is not an RFC 3339 date-time.
    package static func date(_ text: String) -> Date? {
        var reader = Reader(bytes: Array(text.utf8))
        guard let year = reader.digits(4), reader.skip("-"), let month = reader.digits(2), reader.skip("-"), let day = reader.digits(2),
            reader.skip("T") || reader.skip("t"), let hour = reader.digits(2), reader.skip(":"), let minute = reader.digits(2),
            reader.skip(":"), let second = reader.digits(2),
            let whole = CivilTime.seconds(.init(year: year, month: month, day: day, hour: hour, minute: minute, second: second))
        else { return nil }
        var fraction = 0.0
        if reader.skip(".") {
            guard let value = reader.fraction() else { return nil }
            fraction = value
        }
        var offset = 0
        if !(reader.skip("Z") || reader.skip("z")) {
            let sign: Int
            if reader.skip("+") {
                sign = 1
            } else if reader.skip("-") {
                sign = -1
            } else {
                return nil
            }
            guard let hours = reader.digits(2), reader.skip(":"), let minutes = reader.digits(2), hours <= 23, minutes <= 59 else { return nil }
            offset = sign * (hours * 3_600 + minutes * 60)
        }
        guard reader.atEnd else { return nil }
        return Date(timeIntervalSince1970: Double(whole - Int64(offset)) + fraction)
    }

    /// A cursor over the text's bytes.
    private struct Reader {
        let bytes: [UInt8]
        var position = 0

        var atEnd: Bool { position == bytes.count }

        /// Skips `character` if it comes next.
        mutating func skip(_ character: Unicode.Scalar) -> Bool {
            guard position < bytes.count, bytes[position] == UInt8(ascii: character) else { return false }
            position += 1
            return true
        }

        /// The number of exactly `count` ASCII digits, if they come next.
        mutating func digits(_ count: Int) -> Int? {
            guard bytes.count - position >= count else { return nil }
            var value = 0
            for byte in bytes[position..<(position + count)] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            position += count
            return value
        }

        /// The fraction of a second the next digits make (digits past the 15th are ignored).
        mutating func fraction() -> Double? {
            var value = 0.0, scale = 1.0, count = 0
            while position < bytes.count, (0x30...0x39).contains(bytes[position]) {
                if count < 15 {
                    scale /= 10
                    value += Double(bytes[position] - 0x30) * scale
                }
                count += 1
                position += 1
            }
            return count > 0 ? value : nil
        }
    }
}
