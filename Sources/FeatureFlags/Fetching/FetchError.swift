public import Foundation

/// Why a fetch produced no flags; descriptions never hold a query, header value or context attribute. Switch on ``kind`` with `default:`.
public struct FetchError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A kind of failure. New kinds may be added in any release.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, e.g. `timeout`.
        public let name: String
        private init(_ name: String) { self.name = name }

        /// No network path, the host could not be resolved or connected, or the connection dropped.
        public static let offline = Kind("offline")
        /// No complete answer within the budget; the request was cancelled.
        public static let timeout = Kind("timeout")
        /// The service answered with a status other than 2xx or 304.
        public static let httpStatus = Kind("http_status")
        /// The body exceeded the size limit (counted on the bytes received).
        public static let payloadTooLarge = Kind("payload_too_large")
        /// The body could not be read as the endpoint's format.
        public static let decode = Kind("decode")
        /// The caller cancelled, or the fetcher shut down.
        public static let cancelled = Kind("cancelled")
        /// Plain HTTP to a host that is not loopback, without `allowInsecureHTTP`.
        public static let insecureURL = Kind("insecure_url")
        /// The endpoint could not build a request for this context.
        public static let invalidRequest = Kind("invalid_request")
        /// Any other transport failure.
        public static let transport = Kind("transport")
        /// The answer is not signed by a configured trusted key, or a configured key is unusable.
        public static let signatureRejected = Kind("signature_rejected")

        /// The name.
        public var description: String { name }
    }

    enum Base: Hashable, Sendable {
        case offline(String)
        case timeout(Duration)
        case httpStatus(Int, retryAfter: TimeInterval?, detail: String?)
        case payloadTooLarge(limit: Int)
        case decode(FlagError)
        case cancelled
        case insecureURL(host: String)
        case invalidRequest(FlagError)
        case transport(String)
        case signatureRejected(String)
    }

    let base: Base

    private init(_ base: Base) { self.base = base }

    /// No network path, the host could not be resolved or connected, or the connection dropped.
    public static func offline(_ why: String) -> FetchError { FetchError(.offline(why)) }
    /// No complete answer within `budget`; the request was cancelled.
    public static func timeout(_ budget: Duration) -> FetchError { FetchError(.timeout(budget)) }
    /// The service answered `status`, with its `Retry-After` in seconds and the body's own detail.
    public static func httpStatus(_ status: Int, retryAfter: TimeInterval? = nil, detail: String? = nil) -> FetchError {
        FetchError(.httpStatus(status, retryAfter: retryAfter, detail: detail))
    }
    /// The body exceeded `limit` bytes.
    public static func payloadTooLarge(limit: Int) -> FetchError { FetchError(.payloadTooLarge(limit: limit)) }
    /// The body could not be read as the endpoint's format.
    public static func decode(_ error: FlagError) -> FetchError { FetchError(.decode(error)) }
    /// The caller cancelled, or the fetcher shut down.
    public static let cancelled = FetchError(.cancelled)
    /// Plain HTTP to `host`, which is not loopback, without `allowInsecureHTTP`.
    public static func insecureURL(host: String) -> FetchError { FetchError(.insecureURL(host: host)) }
    /// The endpoint could not build a request for this context.
    public static func invalidRequest(_ error: FlagError) -> FetchError { FetchError(.invalidRequest(error)) }
    /// Any other transport failure.
    public static func transport(_ why: String) -> FetchError { FetchError(.transport(why)) }
    /// The answer is not a document a trusted key signed, and why.
    public static func signatureRejected(_ why: String) -> FetchError { FetchError(.signatureRejected(why)) }

    /// The kind of failure.
    public var kind: Kind {
        switch base {
        case .offline: return .offline
        case .timeout: return .timeout
        case .httpStatus: return .httpStatus
        case .payloadTooLarge: return .payloadTooLarge
        case .decode: return .decode
        case .cancelled: return .cancelled
        case .insecureURL: return .insecureURL
        case .invalidRequest: return .invalidRequest
        case .transport: return .transport
        case .signatureRejected: return .signatureRejected
        }
    }

    /// The HTTP status, for ``Kind/httpStatus``.
    public var httpStatus: Int? {
        if case .httpStatus(let status, _, _) = base { return status }
        return nil
    }

    /// The `Retry-After` the service sent, in seconds from its answer, if any.
    public var retryAfter: TimeInterval? {
        if case .httpStatus(_, let retryAfter, _) = base { return retryAfter }
        return nil
    }

    /// Why the signature was rejected, for ``Kind/signatureRejected``.
    var signatureProblem: String? {
        if case .signatureRejected(let why) = base { return why }
        return nil
    }

    /// The endpoint's own error, for ``Kind/decode`` and ``Kind/invalidRequest``.
    public var endpointError: FlagError? {
        switch base {
        case .decode(let e), .invalidRequest(let e): return e
        default: return nil
        }
    }

    /// OpenFeature's error code for the failure.
    public var errorCode: FlagErrorCode {
        switch base {
        case .decode(let e), .invalidRequest(let e): return e.code
        case .httpStatus(let status, _, _) where status == 401 || status == 403: return .providerFatal
        case .httpStatus(400, _, _): return .invalidContext
        default: return .general
        }
    }

    /// Whether this failure is evidence that the network path is down.
    public var suggestsOffline: Bool {
        switch base {
        case .offline, .timeout: return true
        default: return false
        }
    }

    /// Whether only a configuration change can help (credentials rejected, plain HTTP refused).
    public var isFatal: Bool {
        switch base {
        case .httpStatus(401, _, _), .httpStatus(403, _, _), .insecureURL: return true
        default: return false
        }
    }

    /// One line for logs; control characters from the service are escaped so it cannot forge log lines.
    public var description: String { FlagText.printable(text) }

    private var text: String {
        switch base {
        case .offline(let why): return "offline: \(why)"
        case .timeout(let d): return "no answer within \(d.milliseconds) ms"
        case .httpStatus(let status, let retryAfter, let detail):
            var text = "HTTP \(status)"
            if let retryAfter { text += ", retry after \(retryAfter.rounded(.up).roundedClampedToInt) s" }
            if let detail { text += ": \(detail)" }
            return text
        case .payloadTooLarge(let limit): return "response larger than \(limit) bytes"
        case .decode(let e): return "unreadable response: \(e.message)"
        case .cancelled: return "cancelled"
        case .insecureURL(let host): return "refusing plain HTTP to \(host) (HTTPS required except for loopback)"
        case .invalidRequest(let e): return "cannot build the request: \(e.message)"
        case .transport(let why): return "transport error: \(why)"
        case .signatureRejected(let why): return "signature rejected: \(why)"
        }
    }
}
