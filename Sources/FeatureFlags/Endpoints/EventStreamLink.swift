package import Foundation

/// An advertised SSE change stream (OFREP `eventStreams`); the URL is a credential: never stored, redacted in ``description``.
package struct EventStreamLink: Sendable, Hashable, CustomStringConvertible {
    /// Where to connect.
    package var url: URL { urlReference.url }
    /// ``url``, held by reference.
    private let urlReference: URLReference
    /// How long the app may be in the background before the stream closes (`inactivityDelaySec`).
    package let inactivityDelay: Duration
    /// The chain endpoint that advertised it (`"0/ofrep"`); triggered refetch hints go there only.
    package let endpoint: String?
    /// Whether it shares the advertising answer's origin: only then does it get the credentials.
    let sameOrigin: Bool
    /// For a stream an endpoint opens itself; nil for an advertised one.
    let connection: StreamConnection?

    /// OFREP's default for a missing `inactivityDelaySec`.
    package static let defaultInactivityDelay = Duration.seconds(120)

    /// Hashes every field.
    @inline(never)
    package func hash(into hasher: inout Hasher) {
        hasher.combine(urlReference)
        hasher.combine(inactivityDelay)
        hasher.combine(endpoint)
        hasher.combine(sameOrigin)
        hasher.combine(connection)
    }

    /// Links are equal when every field is.
    @inline(never)
    package static func == (lhs: EventStreamLink, rhs: EventStreamLink) -> Bool {
        lhs.urlReference == rhs.urlReference && lhs.inactivityDelay == rhs.inactivityDelay && lhs.endpoint == rhs.endpoint
            && lhs.sameOrigin == rhs.sameOrigin && lhs.connection == rhs.connection
    }

    /// A link.
    package init(
        url: URL, inactivityDelay: Duration = EventStreamLink.defaultInactivityDelay, endpoint: String? = nil, sameOrigin: Bool = false,
        connection: StreamConnection? = nil
    ) {
        self.urlReference = URLReference(url)
        self.inactivityDelay = inactivityDelay
        self.endpoint = endpoint
        self.sameOrigin = sameOrigin
        self.connection = connection
    }

    /// The same link, attributed to the endpoint with scope `endpoint`.
    func advertised(by endpoint: String) -> EventStreamLink {
        EventStreamLink(url: url, inactivityDelay: inactivityDelay, endpoint: endpoint, sameOrigin: sameOrigin, connection: connection)
    }

    /// Whether the stream sends every value when it connects, so that its opening needs no fetch.
    var sendsValuesOnConnect: Bool { connection?.events.sendsValuesOnConnect == true }

    /// `scheme://host:port` of `url`, lower-cased, with the scheme's default port.
    static func origin(of url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        return "\(scheme)://\(host):\(url.port ?? (scheme == "https" ? 443 : 80))"
    }

    /// The URL without query or fragment (secrets), and for a `GET` stream without the context segment.
    package var description: String {
        let text = Self.redacted(url)
        guard connection?.method == "GET", let slash = text.lastIndex(of: "/") else { return text }
        return text[..<slash] + "/<context>"
    }

    /// `url` without its query, fragment or user info.
    static func redacted(_ url: URL) -> String {
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return "(stream URL)" }
        parts.query = nil
        parts.fragment = nil
        parts.user = nil
        parts.password = nil
        return parts.string ?? "(stream URL)"
    }

    /// Well-formed `sse` entries of `eventStreams`, deduplicated, at most ``maximumPerAnswer``; bad ones skipped and counted.
    package static func list(from value: FlagValue?, base: URL?) -> (links: [EventStreamLink], skipped: Int) {
        guard case .list(let entries)? = value else { return ([], value == nil || value == .null ? 0 : 1) }
        var links: [EventStreamLink] = []
        var skipped = 0
        for (index, entry) in entries.enumerated() {
            guard links.count < maximumPerAnswer else { return (links, skipped + entries.count - index) }
            guard let link = link(from: entry, base: base) else {
                skipped += 1
                continue
            }
            if !links.contains(link) { links.append(link) }
        }
        return (links, skipped)
    }

    /// The most streams one answer opens (a deliberate limit; OFREP's ADR-0008 sets none).
    package static let maximumPerAnswer = 8

    private static func link(from entry: FlagValue, base: URL?) -> EventStreamLink? {
        guard case .object(let o) = entry, case .string("sse")? = o["type"] else { return nil }
        var delay = defaultInactivityDelay
        if case .int(let seconds)? = o["inactivityDelaySec"], seconds >= 1 { delay = .seconds(min(seconds, 86_400 * 365)) }
        switch (o["url"], o["endpoint"]) {
        case (.string(let text)?, nil):
            guard let url = absolute(text) else { return nil }
            return EventStreamLink(url: url, inactivityDelay: delay, endpoint: nil, sameOrigin: same(url, base))
        case (nil, .object(let endpoint)?):
            guard case .string(let path)? = endpoint["requestUri"], path.hasPrefix("/"), !path.hasPrefix("//") else { return nil }
            let origin: String
            switch endpoint["origin"] {
            case .string(let text)?:
                guard let url = absolute(text), url.path.isEmpty || url.path == "/", url.query == nil else { return nil }
                origin = text.hasSuffix("/") ? String(text.dropLast()) : text
            case nil:
                guard let base, let scheme = base.scheme, let host = base.host else { return nil }
                origin = "\(scheme)://\(host.contains(":") ? "[\(host)]" : host)\(base.port.map { ":\($0)" } ?? "")"
            default:
                return nil
            }
            guard let url = absolute(origin + path) else { return nil }
            return EventStreamLink(url: url, inactivityDelay: delay, endpoint: nil, sameOrigin: same(url, base))
        default:
            return nil
        }
    }

    private static func same(_ url: URL, _ base: URL?) -> Bool {
        guard let base, let origin = origin(of: url) else { return false }
        return origin == Self.origin(of: base)
    }

    private static func absolute(_ text: String) -> URL? {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "https" || scheme == "http",
            let host = url.host, !host.isEmpty
        else { return nil }
        return url
    }
}

/// How an endpoint's own stream connects and reads events. Holds credentials: never written to disk.
package struct StreamConnection: Sendable, Hashable {

    /// `GET` or `REPORT`.
    package var method: String
    /// Sent with every connection (the endpoint's credentials).
    package var headers: [String: String]
    /// The request body (`REPORT`'s context), if any.
    package var body: [UInt8]?
    /// How the events are read.
    package var events: StreamEventFormat
    /// Silence before the connection counts as half-open; nil: the provider's ``FeatureFlagProvider/Configuration/heartbeatDeadline``.
    package var heartbeatDeadline: Duration?

    /// A connection description.
    package init(method: String, headers: [String: String], body: [UInt8]?, events: StreamEventFormat, heartbeatDeadline: Duration?) {
        self.method = method
        self.headers = headers
        self.body = body
        self.events = events
        self.heartbeatDeadline = heartbeatDeadline
    }
}

/// A stream event's metadata, sent with the fetch it triggers (OFREP ADR-0008 query parameters).
package struct RefetchHint: Sendable, Hashable {
    /// The event's `etag`.
    public var etag: String?
    /// The event's `lastModified`: Unix seconds or a date, as the service wrote it.
    public var lastModified: String?
    /// The endpoint whose stream sent it; the parameters go to that endpoint only.
    public var endpoint: String?

    /// A hint.
    public init(etag: String?, lastModified: String?, endpoint: String?) {
        self.etag = etag
        self.lastModified = lastModified
        self.endpoint = endpoint
    }

    /// The query parameter names OFREP ADR-0008 gives the hint's etag and last-modified.
    package static let etagParameter = "flagConfigEtag"
    package static let lastModifiedParameter = "flagConfigLastModified"

    /// `url` with `flagConfigEtag` / `flagConfigLastModified` added to its query.
    func apply(to url: URL) -> URL {
        var items: [URLQueryItem] = []
        if let etag { items.append(URLQueryItem(name: Self.etagParameter, value: etag)) }
        if let lastModified { items.append(URLQueryItem(name: Self.lastModifiedParameter, value: lastModified)) }
        guard !items.isEmpty, var parts = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        parts.percentEncodedQueryItems = (parts.percentEncodedQueryItems ?? []) + items.map {
            URLQueryItem(name: $0.name, value: $0.value?.addingPercentEncoding(withAllowedCharacters: EndpointSupport.unreserved))   // `+`, `&`, `=` escaped
        }
        return parts.url ?? url
    }
}
