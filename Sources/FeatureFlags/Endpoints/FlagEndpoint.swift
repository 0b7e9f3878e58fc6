public import Foundation

/// One flag service's wire format: how to ask for a context's flags and how to read the
/// answer. Pure — no I/O, no clock, no state — so every service's mapping is testable byte
/// for byte. ``FlagFetcher`` does the HTTP and stamps what the endpoint does not know: the
/// fetch time, the entity tag and the context's fingerprint.
///
/// The services the package speaks are static members, so an app writes
/// `endpoint: .json(post: url)`: ``json(post:headers:)`` and ``json(urlTemplate:headers:)`` here;
/// `.ofrep`, `.launchDarkly`, `.firebaseRemoteConfig` and `.unleash` from the FeatureFlagsServices
/// library; `.flagd` from FeatureFlagsFlagd. Another service is three closures
/// (``init(name:request:decode:failureDetail:)``); check it with `FlagEndpointConformance`
/// from FeatureFlagsTesting.
public struct FlagEndpoint: Sendable {
    /// The wire format behind this endpoint.
    package let format: any EndpointFormat

    /// An endpoint of the package's own formats (and the tests' stand-ins).
    package init(_ format: some EndpointFormat) {
        self.format = format
    }

    /// An endpoint for a service of your own.
    /// - Parameters:
    ///   - name: a short name for events and logs, e.g. `"acme"`.
    ///   - request: the request for a context; the second argument is the entity tag of the
    ///     snapshot the caller holds — send it as `If-None-Match` when the service supports
    ///     conditional requests.
    ///   - decode: reads a 2xx response (never called for 304, which ``FlagFetcher`` answers
    ///     itself).
    ///   - failureDetail: what a non-2xx response says about itself, for the error (no
    ///     secrets, no context values); by default nothing.
    public init(
        name: String,
        request: @escaping @Sendable (EvaluationContext, String?) throws(FlagError) -> FlagRequest,
        decode: @escaping @Sendable (FlagResponse, EvaluationContext) throws(FlagError) -> DecodedFlags,
        failureDetail: @escaping @Sendable (FlagResponse) -> String? = { _ in nil }
    ) {
        format = ClosureFormat(name: name, makeRequest: request, read: decode, detail: failureDetail)
    }

    /// A short name for events and logs, e.g. `"json"` or `"ofrep"`.
    public var name: String { format.name }

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
    /// This format as an endpoint that opens its own stream, if it is one. A requirement, not
    /// an `as?` cast: a cast to a protocol searches every conformance the process holds the
    /// first time it meets a type, which an app would pay at every launch.
    var asStreaming: (any StreamingEndpoint)? { get }
    /// This format as an endpoint whose rules are evaluated on the device, if it is one (a
    /// requirement rather than a cast, as ``asStreaming``).
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

/// An endpoint whose service pushes flag values over a stream the endpoint opens itself
/// (LaunchDarkly's), rather than advertising one in its answers.
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

/// What an endpoint read from a 2xx answer: the flags and what the service said of them, or
/// the service's own "nothing changed".
public struct DecodedFlags: Sendable, Equatable {
    /// The flags evaluated for the context; nil for ``notModified``.
    public let flags: [String: FlagEntry]?
    /// The configuration version the service reported, if it reports one.
    public let version: String?
    /// The time to live (seconds) the service reported, if it reports one.
    public let ttl: TimeInterval?
    /// Whether the service leaves its disabled flags out of the answer (Unleash's frontend API
    /// does), so that a flag the answer lacks is off: see ``FlagSnapshot/missingFlagsAreOff``.
    public let missingFlagsAreOff: Bool
    /// The change streams the answer advertised (OFREP's `eventStreams`, read by the
    /// package's own formats).
    package let streams: [EventStreamLink]

    /// The flags evaluated for the context, with the configuration version and the time to
    /// live (seconds) the service reported, if it reports them. `missingFlagsAreOff` says that
    /// the service leaves disabled flags out of its answers: a flag the answer lacks then reads
    /// `false` (see ``FlagSnapshot/missingFlagsAreOff``), not its code default.
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
    /// JSON (RFC 8259, UTF-8) read the way the package's endpoints read answers, for your own
    /// ``FlagEndpoint``: numbers keep the form the service sent (`1` is an int, `1.0` a
    /// double), duplicate object keys and invalid UTF-8 are errors, nesting stops at 64 levels.
    /// ``description`` writes a value back as compact JSON.
    /// - Throws: ``FlagError`` with `PARSE_ERROR`, naming the first problem and its line
    ///   and column.
    public init(json bytes: some Sequence<UInt8>) throws(FlagError) {
        do {
            self = try FlagJSON.parse(bytes)
        } catch {
            throw FlagError(.parseError, error.description)
        }
    }
}
