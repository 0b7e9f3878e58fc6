import Foundation
import Testing
import TestSupport
@testable import FeatureFlags

@Suite("Retry-After and backoff")
struct RetryAfterAndBackoffTests {
    let now = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT

    @Test func delaySeconds() {
        #expect(RetryAfter.delay("120", now: now) == 120)
        #expect(RetryAfter.delay(" 0 ", now: now) == 0)
        #expect(RetryAfter.delay("-5", now: now) == nil)
        #expect(RetryAfter.delay("1.5", now: now) == nil)
        #expect(RetryAfter.delay("", now: now) == nil)
    }

    @Test func httpDateForms() {
        #expect(RetryAfter.delay("Sun, 06 Nov 1994 08:51:37 GMT", now: now) == 120)
        #expect(RetryAfter.delay("Sunday, 06-Nov-94 08:51:37 GMT", now: now) == 120)
        #expect(RetryAfter.delay("Sun Nov  6 08:51:37 1994", now: now) == 120)
        // A date in the past means "now".
        #expect(RetryAfter.delay("Sun, 06 Nov 1994 08:00:00 GMT", now: now) == 0)
    }

    @Test func rfc850TwoDigitYearsFollowRFC9110() {
        // Within 50 years ahead: this century; further: the century before (§5.6.7).
        let now2026 = Date(timeIntervalSince1970: 1_795_000_000)  // 2026-11-18T…Z
        let in2026 = Date(timeIntervalSince1970: 1_795_000_000 + 120)
        let text = Self.rfc850(in2026)
        #expect(RetryAfter.delay(text, now: now2026) == 120, "\(text)")
        #expect(RetryAfter.httpDate("Monday, 01-Jan-76 00:00:00 GMT", now: now2026).map(Self.year) == 2076)
        #expect(RetryAfter.httpDate("Monday, 01-Jan-77 00:00:00 GMT", now: now2026).map(Self.year) == 1977)
        #expect(RetryAfter.httpDate("Monday, 01-Jan-70 00:00:00 GMT", now: now2026).map(Self.year) == 2070)
        // The year 50 years ahead is judged by the date: up to now's date in it, this century.
        #expect(RetryAfter.httpDate("Wednesday, 18-Nov-76 00:00:00 GMT", now: now2026).map(Self.year) == 2076)
        #expect(RetryAfter.httpDate("Tuesday, 01-Dec-76 00:00:00 GMT", now: now2026).map(Self.year) == 1976)
        // 50 years on from a leap day: 28 February (that year has no 29th).
        let leapDay2024 = Date(timeIntervalSince1970: 1_709_164_800)  // 2024-02-29T00:00:00Z
        #expect(RetryAfter.httpDate("Monday, 28-Feb-74 00:00:00 GMT", now: leapDay2024).map(Self.year) == 2074)
        #expect(RetryAfter.httpDate("Thursday, 01-Mar-74 00:00:00 GMT", now: leapDay2024).map(Self.year) == 1974)
        #expect(RetryAfter.httpDate("Monday, 01-Jan-99 00:00:00 GMT", now: now).map(Self.year) == 1999)
        #expect(RetryAfter.httpDate("Monday, 01-Jan-+5 00:00:00 GMT", now: now) == nil)
        #expect(RetryAfter.httpDate("Sun, +6 Nov 1994 08:49:37 GMT", now: now) == nil)
    }

    static func year(_ date: Date) -> Int {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.component(.year, from: date)
    }

    /// RFC 850's form of a date, written by hand (no formatter: its output varies by platform).
    static func rfc850(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
        let days = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(days[c.weekday! - 1]), \(two(c.day!))-\(months[c.month! - 1])-\(two(c.year! % 100)) "
            + "\(two(c.hour!)):\(two(c.minute!)):\(two(c.second!)) GMT"
    }

    @Test func iso8601Forms() {
        #expect(RetryAfter.delay("1994-11-06T08:51:37Z", now: now) == 120)
        #expect(RetryAfter.delay("1994-11-06T09:51:37+01:00", now: now) == 120)
        #expect(RetryAfter.delay("1994-11-06T08:51:37.500Z", now: now) == 120.5)
    }

    @Test func unreadableValues() {
        for text in ["soon", "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:00:00 GMT", "1994-13-06T08:51:37Z"] {
            #expect(RetryAfter.delay(text, now: now) == nil, "\(text)")
        }
    }

    @Test func backoffCeilingsDoubleUpToTheMaximum() {
        let backoff = Backoff(initial: .seconds(1), multiplier: 2, maximum: .seconds(300))
        let ceilings = (1...11).map { backoff.ceiling(afterFailures: $0) }
        #expect(ceilings == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300].map { Duration.seconds($0) })
        #expect(backoff.ceiling(afterFailures: 10_000) == .seconds(300))
    }

    @Test func fullJitterStaysWithinTheCeilingAndSpreads() {
        let backoff = Backoff(initial: .seconds(1), maximum: .seconds(30))
        var generator = SplitMix(seed: 7)
        for failures in 1...8 {
            let ceiling = backoff.ceiling(afterFailures: failures)
            let delays = (0..<200).map { _ in backoff.delay(afterFailures: failures, using: &generator) }
            #expect(delays.allSatisfy { $0 >= .zero && $0 <= ceiling })
            #expect(Set(delays).count > 150, "jitter should spread the delays")
            #expect(delays.contains { $0 < ceiling / 2 } && delays.contains { $0 > ceiling / 2 })
        }
    }

    @Test func fetchErrorClassification() {
        #expect(FetchError.timeout(.seconds(2)).suggestsOffline)
        #expect(FetchError.offline("x").suggestsOffline)
        #expect(!FetchError.httpStatus(500, retryAfter: nil, detail: nil).suggestsOffline)
        #expect(FetchError.httpStatus(401, retryAfter: nil, detail: nil).isFatal)
        #expect(FetchError.httpStatus(403, retryAfter: nil, detail: nil).errorCode == .providerFatal)
        #expect(!FetchError.httpStatus(429, retryAfter: 3, detail: nil).isFatal)
        #expect(FetchError.decode(FlagError(.parseError, "x")).errorCode == .parseError)
        #expect(FetchError.httpStatus(429, retryAfter: 2.2, detail: "slow down").description == "HTTP 429, retry after 3 s: slow down")
        #expect(FetchError.timeout(.milliseconds(250)).description == "no answer within 250 ms")
    }

    @Test func loopbackDetection() {
        for host in ["127.0.0.1", "127.1.2.3", "localhost", "LOCALHOST", "::1", "[::1]", "api.localhost"] {
            #expect(URLPolicy.isLoopback(host), "\(host)")
        }
        for host in ["128.0.0.1", "example.com", "127.0.0.1.example.com", "10.0.0.1", "localhost.example", "127.0.0"] {
            #expect(!URLPolicy.isLoopback(host), "\(host)")
        }
    }

    @Test func httpsRule() throws {
        try URLPolicy.check(URL(string: "https://flags.example.com/x")!, allowInsecureHTTP: false)
        try URLPolicy.check(URL(string: "http://127.0.0.1:8080/x")!, allowInsecureHTTP: false)
        try URLPolicy.check(URL(string: "http://flags.example.com/x")!, allowInsecureHTTP: true)
        #expect(throws: FetchError.insecureURL(host: "flags.example.com")) {
            try URLPolicy.check(URL(string: "http://flags.example.com/x?key=secret")!, allowInsecureHTTP: false)
        }
        #expect(throws: FetchError.self) { try URLPolicy.check(URL(string: "ftp://flags.example.com/x")!, allowInsecureHTTP: true) }
    }
}

/// The calendar arithmetic under `Retry-After` and RFC 3339 timestamps, checked against
/// Foundation's Gregorian calendar, and the RFC 3339 grammar followed to the letter.
@Suite("Civil time and RFC 3339")
struct CivilTimeTests {
    static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()

    @Test func instantsAgreeWithFoundationsCalendarBothWays() {
        var generator = SplitMix(seed: 11)
        // Years 1583–9999, both sides of 1970: Foundation's Gregorian calendar is Julian before
        // October 1582, while RFC 3339 (and this code) use the Gregorian rules for every year.
        var instants: [Int64] = [0, -1, 86_399, 86_400, -86_400, 951_782_400, 4_107_456_000, -12_212_553_600, 253_402_300_799]
        for _ in 0..<2_000 { instants.append(Int64.random(in: -12_212_553_600...253_402_300_799, using: &generator)) }
        for seconds in instants {
            let f = CivilTime.fields(seconds)
            let c = Self.utc.dateComponents([.year, .month, .day, .hour, .minute, .second], from: Date(timeIntervalSince1970: Double(seconds)))
            #expect([f.year, f.month, f.day, f.hour, f.minute, f.second] == [c.year, c.month, c.day, c.hour, c.minute, c.second], "\(seconds)")
            #expect(CivilTime.seconds(f) == seconds, "\(seconds) round trip")
        }
    }

    @Test func datesThatDoNotExistAreRefused() {
        #expect(CivilTime.seconds(.init(year: 2024, month: 2, day: 29)) != nil, "a leap day")
        #expect(CivilTime.seconds(.init(year: 2000, month: 2, day: 29)) != nil, "400 years: leap")
        for fields in [
            CivilTime.Fields(year: 2023, month: 2, day: 29), .init(year: 1900, month: 2, day: 29), .init(year: 1994, month: 11, day: 31),
            .init(year: 1994, month: 13, day: 1), .init(year: 1994, month: 0, day: 1), .init(year: 1994, month: 1, day: 0),
            .init(year: 1994, month: 1, day: 1, hour: 24), .init(year: 1994, month: 1, day: 1, minute: 60),
            .init(year: 1994, month: 1, day: 1, second: 61),
        ] {
            #expect(CivilTime.seconds(fields) == nil, "\(fields)")
        }
        // A leap second is the first second of the next minute, as Foundation's calendar has it.
        #expect(CivilTime.seconds(.init(year: 2016, month: 12, day: 31, hour: 23, minute: 59, second: 60)) == 1_483_228_800)
    }

    @Test func rfc3339DateTimesAreReadToTheLetter() {
        let at = Date(timeIntervalSince1970: 784_111_897)  // 1994-11-06T08:51:37Z
        for text in ["1994-11-06T08:51:37Z", "1994-11-06t08:51:37z", "1994-11-06T09:51:37+01:00", "1994-11-06T03:21:37-05:30", "1994-11-06T08:51:37-00:00"] {
            #expect(ISO8601.date(text) == at, "\(text)")
        }
        #expect(ISO8601.date("1994-11-06T08:51:37.250Z") == Date(timeIntervalSince1970: 784_111_897.25))
        #expect(ISO8601.date("1994-11-06T08:51:37.1234567890123456789Z")?.timeIntervalSince1970 == 784_111_897.1234567890123)
        #expect(ISO8601.date("2016-12-31T23:59:60Z") == Date(timeIntervalSince1970: 1_483_228_800), "a leap second")
        for text in [
            "", "1994-11-06", "1994-11-06T08:51Z", "1994-11-06T08:51:37", "1994-11-06 08:51:37Z", "94-11-06T08:51:37Z",
            "1994-11-06T08:51:37.Z", "1994-11-06T08:51:37+0100", "1994-11-06T08:51:37+24:00", "1994-11-06T08:51:37+01:60",
            "1994-11-31T08:51:37Z", "1994-02-29T00:00:00Z", "1994-11-06T25:00:00Z", "1994-11-06T08:51:37Zjunk", "+994-11-06T08:51:37Z",
            "1994-11-06T08:51:37 Z", "１９９４-11-06T08:51:37Z",
        ] {
            #expect(ISO8601.date(text) == nil, "\(text)")
        }
    }

    @Test func instantsPrintAsRFC3339() {
        #expect(ISO8601.string(Date(timeIntervalSince1970: 784_111_897.9)) == "1994-11-06T08:51:37Z")
        #expect(ISO8601.string(Date(timeIntervalSince1970: -1)) == "1969-12-31T23:59:59Z")
        #expect(ISO8601.string(Date(timeIntervalSince1970: 1_795_000_000)) == "2026-11-18T11:06:40Z")
        #expect(ISO8601.string(Date(timeIntervalSince1970: -62_135_596_800)) == "0001-01-01T00:00:00Z")
        #expect(ISO8601.string(Date(timeIntervalSince1970: 1e15)).hasSuffix("s after 1970"), "beyond year 9999: the raw count")
        #expect(ISO8601.string(Date(timeIntervalSince1970: -.infinity)).hasSuffix("s after 1970"))
        for seconds: Double in [0, 784_111_897, 1_795_000_000, -86_400 * 365] {
            let date = Date(timeIntervalSince1970: seconds)
            #expect(ISO8601.date(ISO8601.string(date)) == date)
        }
    }

    @Test func httpDatesOfDaysThatDoNotExistAreUnreadable() {
        let now = Date(timeIntervalSince1970: 784_111_777)
        #expect(RetryAfter.delay("Thu, 31 Nov 1994 08:51:37 GMT", now: now) == nil)
        #expect(RetryAfter.delay("Tue, 29 Feb 2000 00:00:00 GMT", now: Date(timeIntervalSince1970: 951_782_280)) == 120, "a leap day")
        #expect(RetryAfter.delay("Sun, 06 Nov 1994 08:51:37 GMT", now: .distantFuture) == 0)
        #expect(RetryAfter.httpDate("Sunday, 06-Nov-94 08:51:37 GMT", now: .distantFuture) != nil, "any now places a two-digit year")
        // A clock that reads no finite time places the two-digit year from 1970.
        #expect(RetryAfter.httpDate("Sunday, 06-Nov-94 08:51:37 GMT", now: Date(timeIntervalSince1970: .infinity)).map(RetryAfterAndBackoffTests.year) == 1994)
        #expect(RetryAfter.httpDate("Sunday, 06-Nov-94 08:51:37 GMT", now: Date(timeIntervalSince1970: .nan)).map(RetryAfterAndBackoffTests.year) == 1994)
    }
}
