import Foundation

/// ISO-8601 / RFC 3339 internet date-times (`2026-11-21T14:30:00Z`, with or without
/// fractional seconds): the one parser for `Retry-After` values and the schema's `iso8601` format.
enum ISO8601 {
    /// `2026-11-26T16:52:08Z` for messages (seconds, UTC).
    static func string(_ date: Date) -> String { ISO8601DateFormatter().string(from: date) }

    /// The instant `text` names, or nil when it is not an internet date-time.
    static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }
}
