import FeatureFlags
import Foundation

extension FlagServer {
    /// How the server listens and what it accepts.
    public struct Configuration: Sendable {
        /// The address to bind. Default `127.0.0.1`: the server is for loopback use.
        public var host: String
        /// The port; 0 (default) takes any free port, reported by ``FlagServer/port``.
        public var port: UInt16
        /// Connections served at once. When all are taken, a new connection takes the place of
        /// the one stalled longest — waiting for a request (idle, or a header still arriving) or
        /// for its client to read an answer — if it has been stalled for at least
        /// ``evictionGrace``; connections working on a request are never evicted. When none
        /// qualifies, the new connection is answered 503 and closed.
        public var maxConnections: Int
        /// How long a connection must have been stalled before a new connection may take its
        /// place when all ``maxConnections`` are taken. Default zero: whenever the server is
        /// full, the connection stalled longest gives way, so clients that hold places without
        /// sending or reading can never keep a new client out. Longer graces refuse new clients
        /// (503) rather than close connections that may only be slow.
        public var evictionGrace: Duration
        /// Largest request header section, in bytes (431 beyond).
        public var maxHeaderBytes: Int
        /// Largest request body, in bytes (413 beyond).
        public var maxBodyBytes: Int
        /// How long an idle keep-alive connection stays open.
        public var idleTimeout: Duration
        /// How long a request may take to arrive, from its first byte to its last (header
        /// section and body): a client that sends its header a byte at a time is answered 408 and
        /// closed at this deadline, however often it sends. Default 10 s.
        public var requestTimeout: Duration
        /// How long one write of an answer may wait for a client that does not read: the
        /// connection is closed when nothing could be sent for this long. Default 10 s.
        public var sendTimeout: Duration
        /// For `GET /flags/<value>.json`: the context attribute `<value>` sets.
        public var pathAttribute: String
        /// Header fields every flag request must carry with exactly these values (credentials):
        /// missing → 401, another value → 403. Empty (default): no check.
        public var requiredHeaders: [String: String]
        /// Change streams (`GET /events`) open at once; more are answered 503. Streams do not
        /// take places of ``maxConnections``. Default 512.
        public var maxStreams: Int
        /// How often an idle change stream sends a comment, so that clients can tell a live
        /// stream from a half-open one. Default 15 s.
        public var streamHeartbeat: Duration
        /// Whether OFREP and JSON answers advertise the change stream (`"eventStreams"`, OFREP
        /// ADR-0008, `{"type": "sse", "endpoint": {"requestUri": "/events"}}`). Default on;
        /// off when ``maxStreams`` is 0.
        public var advertiseStreams: Bool
        /// How many requests the log keeps (``FlagServer/requests``): the most recent; older
        /// ones are dropped, so memory stays bounded however long the server runs. Default 1,000.
        public var maxLoggedRequests: Int

        /// A configuration.
        public init(
            host: String = "127.0.0.1", port: UInt16 = 0, maxConnections: Int = 32, evictionGrace: Duration = .zero,
            maxHeaderBytes: Int = 16 << 10,
            maxBodyBytes: Int = 64 << 10, idleTimeout: Duration = .seconds(5), requestTimeout: Duration = .seconds(10),
            sendTimeout: Duration = .seconds(10), pathAttribute: String = "venue",
            requiredHeaders: [String: String] = [:], maxLoggedRequests: Int = 1_000, maxStreams: Int = 512,
            streamHeartbeat: Duration = .seconds(15), advertiseStreams: Bool = true
        ) {
            self.host = host
            self.port = port
            self.maxConnections = maxConnections
            self.evictionGrace = evictionGrace
            self.maxHeaderBytes = maxHeaderBytes
            self.maxBodyBytes = maxBodyBytes
            self.idleTimeout = idleTimeout
            self.requestTimeout = requestTimeout
            self.sendTimeout = sendTimeout
            self.pathAttribute = pathAttribute
            self.requiredHeaders = requiredHeaders
            self.maxLoggedRequests = max(1, maxLoggedRequests)
            self.maxStreams = max(0, maxStreams)
            self.streamHeartbeat = max(streamHeartbeat, .milliseconds(10))
            self.advertiseStreams = advertiseStreams
        }
    }

    /// A misbehaviour to rehearse, applied to every flag request until cleared.
    public enum Fault: Sendable, Equatable, CustomStringConvertible {
        /// Read the request, then send nothing until the client gives up.
        case hangBeforeHeaders
        /// Send the headers and half the body, then nothing.
        case stallMidBody
        /// Close the connection without answering.
        case closeConnection
        /// Answer this status, with `Retry-After` when given (sent exactly as written).
        case status(Int, retryAfter: String?)
        /// Answer 200 with a body that is not JSON.
        case garbageBody
        /// Answer 200 with `bytes` of body, Content-Length declared.
        case oversizedBody(bytes: Int)
        /// Answer 200 with `bytes` of chunked body, no Content-Length.
        case oversizedChunkedBody(bytes: Int)
        /// Answer 200 with `bytes` of body delimited by closing the connection (HTTP/1.0 style:
        /// neither Content-Length nor chunked).
        case oversizedCloseDelimitedBody(bytes: Int)
        /// Answer 200 with a chunked body that never ends.
        case endlessChunkedBody
        /// Answer 200 with exactly these bytes as the body (hostile payloads).
        case body([UInt8])
        /// Answer a connection's first request, then reset the connection (TCP RST) when a
        /// second request arrives on it: a server or middlebox dropping a kept-alive connection.
        case resetReusedConnections
        /// Answer `status` (a redirect: 301, 302, 303, 307 or 308) with `Location: location`: a
        /// flag service that moved, or one made to send its clients elsewhere.
        case redirect(status: Int, location: String)

        /// A short name for logs.
        public var description: String {
            switch self {
            case .hangBeforeHeaders: return "hang"
            case .stallMidBody: return "stall"
            case .closeConnection: return "close"
            case .status(let s, let r): return "status \(s)" + (r.map { " retry-after \($0)" } ?? "")
            case .garbageBody: return "garbage"
            case .oversizedBody(let n): return "oversized \(n)"
            case .oversizedChunkedBody(let n): return "oversized-chunked \(n)"
            case .oversizedCloseDelimitedBody(let n): return "oversized-close \(n)"
            case .endlessChunkedBody: return "endless"
            case .body(let bytes): return "body \(bytes.count) bytes"
            case .resetReusedConnections: return "reset-reused"
            case .redirect(let status, _): return "redirect \(status)"
            }
        }
    }

    /// A misbehaviour of the change streams (`GET /events`) to rehearse, until cleared.
    public enum StreamFault: Sendable, Equatable, CustomStringConvertible {
        /// Close each stream after it has sent this many change events.
        case dropAfter(events: Int)
        /// Keep each stream open but send nothing at all: no events, no heartbeats.
        case halfOpen
        /// Send heartbeats this far apart instead of ``Configuration/streamHeartbeat``.
        case slowHeartbeat(Duration)

        /// A short name for logs.
        public var description: String {
            switch self {
            case .dropAfter(let n): return "drop after \(n) events"
            case .halfOpen: return "half-open"
            case .slowHeartbeat(let d): return "heartbeat every \(d.milliseconds) ms"
            }
        }
    }

    /// One request as the server saw it.
    public struct RequestRecord: Sendable {
        /// Its position in the log, from 0.
        public let index: Int
        /// `GET`, `POST` …
        public let method: String
        /// The path without the query. It may hold attribute values: log ``route`` instead.
        public let path: String
        /// The route without any value, e.g. `GET /flags/<venue>.json` or `POST ofrep`: what
        /// `flagctl serve` logs, with the context's fingerprint.
        public let route: String
        /// Header fields, lower-cased names.
        public let headers: [String: String]
        /// The `flagConfigEtag` query parameter: set on a refetch a change-stream event triggered.
        public var flagConfigEtag: String? = nil
        /// The `flagConfigLastModified` query parameter, likewise.
        public var flagConfigLastModified: String? = nil
        /// When the request's head had been read.
        public var receivedAt: ContinuousClock.Instant = .now
        /// The fingerprint of the context the request carried (nil if it carried none).
        public let contextFingerprint: String?
        /// The fault applied, if any.
        public let fault: Fault?
        /// The status answered; nil while in progress, or if none was sent.
        public internal(set) var status: Int?
        /// Body bytes sent.
        public internal(set) var bytesSent: Int
        /// Time from the request's arrival to the end of the answer; nil while in progress.
        public internal(set) var duration: Duration?
        /// Bytes of the request as received: request line, headers and body.
        public let requestBytes: Int
        /// Bytes of the answer's status line and headers (the body is ``bytesSent``).
        public internal(set) var responseHeadBytes: Int

        /// The `If-None-Match` the client sent.
        public var ifNoneMatch: String? { headers["if-none-match"] }
    }
}
