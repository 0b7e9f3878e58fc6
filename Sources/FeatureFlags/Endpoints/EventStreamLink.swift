package import Foundation

/// A change stream a flag service advertised in an answer (OFREP's `eventStreams`, and the
/// same member in the project's JSON document): a server-sent-events URL whose `message`
/// events say "flags changed, fetch again".
///
/// The URL is treated as a credential — it may carry a token or a channel name — so it is
/// never written to disk, and ``description`` shows only its scheme, host and path.
package struct EventStreamLink: Sendable, Hashable, CustomStringConvertible {
    /// Where to connect.
    package var url: URL { urlReference.url }
    /// ``url``, held by reference (`Support/FixedLayout.swift`).
    private let urlReference: URLReference
    /// How long the app may be inactive (in the background) before the stream is closed;
    /// `inactivityDelaySec`, 120 s when the service does not say.
    package let inactivityDelay: Duration
    /// The endpoint of the fetcher's chain that advertised it (`"0/ofrep"`); refetches the
    /// stream triggers carry its metadata to that endpoint only.
    package let endpoint: String?
    /// Whether it is on the origin of the URL the advertisement came from: only then does it
    /// get the fetcher's credentials.
    let sameOrigin: Bool
    /// How to connect and what its events mean, for a stream an endpoint opens itself; nil for
    /// an advertised one (the flag document's refetch events over `GET`).
    let connection: StreamConnection?

    /// OFREP's default for a missing `inactivityDelaySec`.
    package static let defaultInactivityDelay = Duration.seconds(120)

    // Written out and kept out of line: the sets and dictionaries keyed by links call these
    // instead of each carrying its own inlined copy.
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
    package init(url: URL, inactivityDelay: Duration = EventStreamLink.defaultInactivityDelay, endpoint: String? = nil) {
        self.init(url: url, inactivityDelay: inactivityDelay, endpoint: endpoint, sameOrigin: false)
    }

    package init(url: URL, inactivityDelay: Duration, endpoint: String?, sameOrigin: Bool, connection: StreamConnection? = nil) {
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

    /// `scheme://host[:port]/path`, without the query or fragment that may hold secrets; for a
    /// stream an endpoint opens by `GET`, whose path may carry the context, without its last segment.
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

    /// Reads an `eventStreams` member: the entries of type `sse` that are well formed, in
    /// order, without duplicates. Entries of other types are skipped (forward compatibility);
    /// so are malformed ones — a broken advertisement must not cost the flags it came with —
    /// and both are counted in `skipped`.
    ///
    /// An entry has `type`, then exactly one of `url` (absolute, http or https) and
    /// `endpoint` (`{"origin"?: "https://host", "requestUri": "/path?query"}`; without
    /// `origin`, the origin of `base`, the URL the answer came from). `inactivityDelaySec` is
    /// an integer of at least 1; anything else there means the default.
    ///
    /// At most ``maximumPerAnswer`` links are kept: the entries after that many distinct
    /// streams are skipped unread.
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

    /// The most streams one answer opens. OFREP's ADR-0008 sets no limit; a service needs one
    /// or two. Without a limit, an answer as large as the fetcher accepts could ask for about
    /// 25,000 connections.
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

/// How a stream an endpoint opens itself is connected, and how its events are read. Its
/// header fields (credentials) and body are the endpoint's, never written to disk: such a link
/// is built again from the endpoint and the context at each launch.
package struct StreamConnection: Sendable, Hashable {

    /// `GET` or `REPORT`.
    package var method: String
    /// Sent with every connection (the endpoint's credentials).
    package var headers: [String: String]
    /// The request body (`REPORT`'s context), if any.
    package var body: [UInt8]?
    /// How the events are read.
    package var events: StreamEventFormat
    /// How long the connection may stay silent before it counts as half-open (the service's
    /// heartbeat interval decides; nil: the provider's ``FeatureFlagProvider/Configuration/heartbeatDeadline``).
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

/// The metadata a stream's event carried, sent with the one fetch that event triggers
/// (OFREP's `flagConfigEtag` and `flagConfigLastModified` query parameters).
package struct RefetchHint: Sendable, Hashable {
    /// The event's `etag`.
    public var etag: String?
    /// The event's `lastModified`: Unix seconds or a date, as the service wrote it.
    public var lastModified: String?
    /// The scope of the endpoint whose stream sent it; the parameters go to that endpoint only.
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
            URLQueryItem(name: $0.name, value: $0.value?.addingPercentEncoding(withAllowedCharacters: Self.queryValue))
        }
        return parts.url ?? url
    }

    /// Characters left unescaped in a query value (unreserved only: `+`, `&`, `=` and quotes are escaped).
    private static let queryValue = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
