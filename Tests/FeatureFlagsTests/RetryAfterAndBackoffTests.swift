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
