import Foundation

/// Why ``OnlineClient/fetch(for:)`` produced no snapshot. Descriptions name the host at
/// most: never a query string, header value or context attribute.
public enum FetchError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No network path, the host could not be resolved or connected, or the connection dropped.
    case offline(String)
    /// No complete answer within the deadline; the request was cancelled.
    case timeout(Duration)
    /// The service answered with a status other than 2xx or 304. `retryAfter` is the
    /// `Retry-After` header as seconds from the response (seconds, HTTP-date or ISO-8601 form).
    case httpStatus(Int, retryAfter: TimeInterval?, detail: String?)
    /// The body exceeded the size limit (counted on the bytes received, not only Content-Length).
    case payloadTooLarge(limit: Int)
    /// The body could not be read as the endpoint's format.
    case decode(FlagEndpointError)
    /// The caller cancelled, or the client shut down.
    case cancelled
    /// Plain HTTP to a host that is not loopback, without `allowInsecureHTTP`.
    case insecureURL(host: String)
    /// The endpoint could not build a request for this context.
    case invalidRequest(FlagEndpointError)
    /// Any other transport failure.
    case transport(String)
    /// The answer arrived and decoded, but broke the provider's ``FlagSchema``: it was
    /// rejected whole and the Last-Known-Good stays.
    case invalidPayload([FlagViolation])

    /// OpenFeature's error code for the failure.
    public var errorCode: FlagErrorCode {
        switch self {
        case .decode(let e): return e.code
        case .invalidRequest(let e): return e.code
        case .httpStatus(let status, _, _) where status == 401 || status == 403: return .providerFatal
        case .httpStatus(400, _, _): return .invalidContext
        default: return .general
        }
    }

    /// Whether this failure is evidence that the network path is down.
    public var suggestsOffline: Bool {
        switch self {
        case .offline, .timeout: return true
        default: return false
        }
    }

    /// Whether retrying cannot help without a change of configuration (credentials rejected,
    /// plain HTTP refused).
    public var isFatal: Bool {
        switch self {
        case .httpStatus(401, _, _), .httpStatus(403, _, _), .insecureURL: return true
        default: return false
        }
    }

    /// One line for events and logs.
    public var description: String {
        switch self {
        case .offline(let why): return "offline: \(why)"
        case .timeout(let d): return "no answer within \(d.milliseconds) ms"
        case .httpStatus(let status, let retryAfter, let detail):
            var text = "HTTP \(status)"
            if let retryAfter { text += ", retry after \(Int(retryAfter.rounded(.up))) s" }
            if let detail { text += ": \(detail)" }
            return text
        case .payloadTooLarge(let limit): return "response larger than \(limit) bytes"
        case .decode(let e): return "unreadable response: \(e.message)"
        case .cancelled: return "cancelled"
        case .insecureURL(let host): return "refusing plain HTTP to \(host) (HTTPS required except for loopback)"
        case .invalidRequest(let e): return "cannot build the request: \(e.message)"
        case .transport(let why): return "transport error: \(why)"
        case .invalidPayload(let violations):
            let shown = violations.prefix(3).map(\.description).joined(separator: "; ")
            let more = violations.count > 3 ? "; and \(violations.count - 3) more" : ""
            return "payload rejected by the schema (\(violations.count) violation\(violations.count == 1 ? "" : "s")): \(shown)\(more)"
        }
    }
}

extension Duration {
    /// Whole milliseconds, rounded down.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }

    /// The duration in seconds as a `Double`.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
