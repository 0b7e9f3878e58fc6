import FeatureFlags
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The `Date` header field every answer carries (RFC 9110 §6.6.1: an origin server with a clock
/// must send it in every 2xx, 3xx and 4xx answer): the current second as an IMF-fixdate, e.g.
/// `Sun, 06 Nov 1994 08:49:37 GMT`, formatted once per second and shared by the connections.
enum HTTPDate {
    private static let latest = Locked<(second: Int, text: String)>((-1, ""))

    /// The current time, to the second.
    static func now() -> String {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        let second = Int(spec.tv_sec)
        if let cached = latest.withLock({ $0.second == second ? $0.text : nil }) { return cached }
        let text = format(second)
        latest.withLock { $0 = (second, text) }
        return text
    }

    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `seconds` since 1970 as an IMF-fixdate (always GMT; no locale, no formatter).
    static func format(_ seconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return "Thu, 01 Jan 1970 00:00:00 GMT" }
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let year = Int(parts.tm_year) + 1900
        let day = days[Int(parts.tm_wday) % 7]
        let month = months[Int(parts.tm_mon) % 12]
        return "\(day), \(two(parts.tm_mday)) \(month) \(year) \(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
