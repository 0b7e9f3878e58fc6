import Foundation

/// Parses `Retry-After` (RFC 9110 §10.2.3), plus ISO-8601 as a deliberate deviation some services need.
enum RetryAfter {
    /// Seconds to wait from `now`, never negative; nil when the header is unreadable.
    static func delay(_ header: String, now: Date) -> TimeInterval? {
        let text = header.trimmingCharacters(in: .whitespaces)
        if text.isEmpty { return nil }
        if text.allSatisfy(\.isASCIIDigit) {
            guard let seconds = Double(text), seconds.isFinite else { return nil }
            return seconds
        }
        guard let date = httpDate(text, now: now) ?? ISO8601.date(text) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// IMF-fixdate, RFC 850 or asctime in UTC, nil if nonexistent; RFC 850 years per RFC 9110 §5.6.7 relative to `now`.
    static func httpDate(_ text: String, now: Date) -> Date? {
        let t = text.split(separator: " ").map(String.init)
        let day: String, month: String, year: String, time: String
        // `now` + 50 years when an RFC 850 year lands in that year; a later date is a century back.
        var fiftyYearsOn: Int64?
        if t.count == 6, t[0].hasSuffix(","), t[5] == "GMT" {
            (day, month, year, time) = (t[1], t[2], t[3], t[4])
        } else if t.count == 4, t[0].hasSuffix(","), t[3] == "GMT" {
            let dmy = t[1].split(separator: "-").map(String.init)
            guard dmy.count == 3, let yy = Int(dmy[2]), dmy[2].count == 2, dmy[2].allSatisfy(\.isASCIIDigit) else { return nil }
            let seconds = now.timeIntervalSince1970
            var today =
                seconds.isFinite && abs(seconds) < 1e15 ? CivilTime.fields(Int64(seconds)) : CivilTime.Fields(year: 1970, month: 1, day: 1)
            let thisYear = today.year
            var full = thisYear - thisYear % 100 + yy
            if full > thisYear + 50 { full -= 100 }
            if full == thisYear + 50 {
                today.year += 50
                if today.month == 2, today.day == 29 { today.day = 28 }
                fiftyYearsOn = CivilTime.seconds(today)
            }
            (day, month, year, time) = (dmy[0], dmy[1], String(full), t[2])
        } else if t.count == 5 {
            (day, month, year, time) = (t[2], t[1], t[4], t[3])
        } else {
            return nil
        }
        // Digits only (`Int` would also read a sign).
        guard (day + year + time).allSatisfy({ $0.isASCIIDigit || $0 == ":" }) else { return nil }
        let hms = time.split(separator: ":").compactMap { Int($0) }
        guard let d = Int(day), let m = months.firstIndex(of: month), let y = Int(year), year.count == 4, hms.count == 3 else { return nil }
        var fields = CivilTime.Fields(year: y, month: m + 1, day: d, hour: hms[0], minute: hms[1], second: hms[2])
        var seconds = CivilTime.seconds(fields)
        if let fiftyYearsOn, let candidate = seconds, candidate > fiftyYearsOn {
            fields.year -= 100
            seconds = CivilTime.seconds(fields)
        }
        return seconds.map { Date(timeIntervalSince1970: Double($0)) }
    }
}

extension Character {
    /// `0`…`9` alone (a digit with a combining mark is one `Character` that sorts inside the range).
    package var isASCIIDigit: Bool { utf8.count == 1 && ("0"..."9").contains(self) }
}
