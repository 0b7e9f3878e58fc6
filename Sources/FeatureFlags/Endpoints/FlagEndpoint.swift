public import Foundation

/// One flag service's wire format, pure (no I/O or state); use a static member or ``init(name:request:decode:failureDetail:)``.
public struct FlagEndpoint: Sendable {
    /// The wire format behind this endpoint.
    package let format: any EndpointFormat

    /// An endpoint of the package's own formats (and the tests' stand-ins).
    package init(_ format: some EndpointFormat) {
        self.format = format
    }

    /// An endpoint for a service of your own. `request` gets the held entity tag (for `If-None-Match`);
    /// `decode` never sees a 304; `failureDetail` must name no secret or context value.
    public init(
        name: String,
        request: @escaping @Sendable (EvaluationContext, String?) throws(FlagError) -> FlagRequest,
        decode: @escaping @Sendable (FlagResponse, EvaluationContext) throws(FlagError) -> DecodedFlags,
        failureDetail: @escaping @Sendable (FlagResponse) -> String? = { _ in nil }
    ) {
        format = ClosureFormat(name: name, makeRequest: request, read: decode, detail: failureDetail)
    }

    /// The name ``named(_:)`` gave, if any.
    private var label: String?

    /// A short name for events, logs and a set's services: the one ``named(_:)`` gave, else the format's (`"json"`, `"ofrep"`).
    public var name: String { label ?? format.name }

    /// The same endpoint under `name`: how a set of services (``ServiceStrategy``) names it in details, events and the
    /// fallback file. Keep a service's name from release to release: its held values are found by it.
    public func named(_ name: String) -> FlagEndpoint {
        var named = self
        named.label = name
        return named
    }

    /// The request for `context`; `etag` is the entity tag of the snapshot the caller holds.
    public func request(for context: EvaluationContext, etag: String?) throws(FlagError) -> FlagRequest {
        try format.request(for: context, etag: etag)
    }

    /// Reads a 2xx response.
    public func decode(_ response: FlagResponse, for context: EvaluationContext) throws(FlagError) -> DecodedFlags {
        try format.decode(response, for: context)
    }

    /// What a non-2xx response says about itself, if anything.
    public func failureDetail(_ response: FlagResponse) -> String? {
        format.failureDetail(response)
    }
}

/// What every wire format implements; ``FlagEndpoint`` wraps one.
package protocol EndpointFormat: Sendable {
    /// A short name for events and logs.
    var name: String { get }
    /// The request for `context`, conditional on `etag` where the service supports it.
    func request(for context: EvaluationContext, etag: String?) throws(FlagError) -> FlagRequest
    /// Reads a 2xx response.
    func decode(_ response: FlagResponse, for context: EvaluationContext) throws(FlagError) -> DecodedFlags
    /// What a non-2xx response says about itself.
    func failureDetail(_ response: FlagResponse) -> String?
    /// This format as a streaming endpoint, if it is one (a requirement, as protocol casts are slow at launch).
    var asStreaming: (any StreamingEndpoint)? { get }
    /// This format as a local-evaluation endpoint, if it is one.
    var asLocalEvaluation: (any LocalEvaluationEndpoint)? { get }
}

extension EndpointFormat {
    /// No detail.
    package func failureDetail(_ response: FlagResponse) -> String? { nil }
    /// Not a streaming endpoint.
    package var asStreaming: (any StreamingEndpoint)? { nil }
    /// Not a local-evaluation endpoint.
    package var asLocalEvaluation: (any LocalEvaluationEndpoint)? { nil }
}

extension StreamingEndpoint {
    /// Itself.
    package var asStreaming: (any StreamingEndpoint)? { self }
}

/// A service of the app's own, as closures.
private struct ClosureFormat: EndpointFormat {
    let name: String
    let makeRequest: @Sendable (EvaluationContext, String?) throws(FlagError) -> FlagRequest
    let read: @Sendable (FlagResponse, EvaluationContext) throws(FlagError) -> DecodedFlags
    let detail: @Sendable (FlagResponse) -> String?

    func request(for context: EvaluationContext, etag: String?) throws(FlagError) -> FlagRequest {
        try makeRequest(context, etag)
    }

    func decode(_ response: FlagResponse, for context: EvaluationContext) throws(FlagError) -> DecodedFlags {
        try read(response, context)
    }

    func failureDetail(_ response: FlagResponse) -> String? { detail(response) }
}

/// An endpoint that opens its own value-pushing stream (LaunchDarkly's) instead of advertising one.
package protocol StreamingEndpoint: EndpointFormat {
    /// The stream for `context`, or nil when streaming is off.
    func streamLink(for context: EvaluationContext) -> EventStreamLink?
    /// Reads flag values a stream brought, in the shape of the polling answer.
    func decode(streamed flags: [String: FlagValue], for context: EvaluationContext) throws(FlagError) -> DecodedFlags
}

/// An HTTP request as an endpoint describes it.
public struct FlagRequest: Sendable, Equatable {
    /// The absolute URL.
    public var url: URL {
        get { urlReference.url }
        set { urlReference = URLReference(newValue) }
    }
    /// ``url``, held by reference (`Support/FixedLayout.swift`).
    private var urlReference: URLReference
    /// `GET`, `POST`, `REPORT` …
    public var method: String
    /// Header fields. Values may be secrets (authorisation): they are sent, never logged.
    public var headers: [String: String]
    /// The body, if any.
    public var body: [UInt8]?

    /// A request.
    public init(url: URL, method: String = "GET", headers: [String: String] = [:], body: [UInt8]? = nil) {
        self.urlReference = URLReference(url)
        self.method = method
        self.headers = headers
        self.body = body
    }
}

/// An HTTP response as the client received it.
public struct FlagResponse: Sendable, Equatable {
    /// The status code.
    public var status: Int
    /// Header fields with lower-cased names.
    public var headers: [String: String]
    /// The body bytes (never more than the client's size limit).
    public var body: [UInt8]

    /// A response; header names are lower-cased.
    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { _, last in last })
        self.body = body
    }

    /// The header `name` (case-insensitive).
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// What an endpoint read from a 2xx answer: the flags, or the service's "nothing changed".
public struct DecodedFlags: Sendable, Equatable {
    /// The flags evaluated for the context; nil for ``notModified``.
    public let flags: [String: FlagEntry]?
    /// The configuration version the service reported, if it reports one.
    public let version: String?
    /// The time to live (seconds) the service reported, if it reports one.
    public let ttl: TimeInterval?
    /// Whether a flag the answer lacks is off (Unleash omits disabled flags): ``FlagSnapshot/missingFlagsAreOff``.
    public let missingFlagsAreOff: Bool
    /// The change streams the answer advertised (OFREP's `eventStreams`).
    package let streams: [EventStreamLink]

    /// The flags with the service's version and TTL; with `missingFlagsAreOff` an absent flag reads `false`.
    public static func flags(
        _ flags: [String: FlagEntry], version: String? = nil, ttl: TimeInterval? = nil, missingFlagsAreOff: Bool = false
    ) -> DecodedFlags {
        DecodedFlags(flags: flags, version: version, ttl: ttl, missingFlagsAreOff: missingFlagsAreOff, streams: [])
    }

    /// Flags with the change streams the answer advertised.
    package static func flags(
        _ flags: [String: FlagEntry], version: String? = nil, ttl: TimeInterval? = nil, streams: [EventStreamLink]
    ) -> DecodedFlags {
        DecodedFlags(flags: flags, version: version, ttl: ttl, missingFlagsAreOff: false, streams: streams)
    }

    /// The service's own "nothing changed" in a 2xx answer (a 304 never reaches the endpoint).
    public static let notModified = DecodedFlags(flags: nil, version: nil, ttl: nil, missingFlagsAreOff: false, streams: [])

    private init(flags: [String: FlagEntry]?, version: String?, ttl: TimeInterval?, missingFlagsAreOff: Bool, streams: [EventStreamLink]) {
        self.flags = flags
        self.version = version
        self.ttl = ttl
        self.missingFlagsAreOff = missingFlagsAreOff
        self.streams = streams
    }
}

extension FlagValue {
    /// JSON (RFC 8259) read as the package's endpoints read it: `1` is an int, `1.0` a double;
    /// duplicate keys, invalid UTF-8 and nesting past 64 levels throw `PARSE_ERROR` with line and column.
    public init(json bytes: some Sequence<UInt8>) throws(FlagError) {
        do {
            self = try FlagJSON.parse(bytes)
        } catch {
            throw FlagError(.parseError, error.description)
        }
    }
}
