public import Foundation

/// Fetches a context's flags from a flag service, through an ordered chain of
/// ``FlagEndpoint``s and a ``FlagTransport`` (URLSession by default). Stateless: it keeps no
/// entity tags and no snapshots — the caller says what it holds (`ifNoneMatch`) and gets back
/// what the service said. ``FeatureFlagProvider`` is the caller in an app; the fetcher is also
/// usable alone, from scripts and tools.
///
/// - **One budget for the whole fetch** (default 2 s), enforced by the fetcher itself by racing
///   each request against its clock and cancelling the loser — Linux URLSession timeouts are
///   whole, idle-based seconds. In a chain, each endpoint gets an equal share of what is left
///   (`remaining ÷ endpoints left`): one that fails fast leaves the rest to the next, and one
///   that hangs is cut off at its share, so the last endpoint always gets time before the
///   budget ends. A single endpoint gets the whole budget.
/// - **Entity tags** are scoped to the endpoint that sent them: `If-None-Match` goes only to
///   that endpoint. A "not modified" answer to a request that carried no tag is a broken
///   service, reported as a decode error.
/// - **Stamping in one place**: the fetch time, the entity tag and the context's fingerprint
///   are set here, on what the endpoint decoded.
/// - **HTTPS** is required except for loopback hosts, unless ``Configuration/allowInsecureHTTP``.
/// - **Headers** from the configuration (authorisation) go with every request and never
///   appear in errors or events.
public final class FlagFetcher: Sendable {
    /// How the fetcher fetches.
    public struct Configuration: Sendable {
        /// The budget of one whole fetch, every endpoint of the chain included. Default 2 s;
        /// a longer one than 2³² seconds (about 136 years) counts as that.
        public var budget: Duration
        /// The largest body accepted, counted on the bytes received. Default 1 MiB.
        public var maxResponseBytes: Int
        /// Allow plain HTTP to hosts that are not loopback. Default off.
        public var allowInsecureHTTP: Bool
        /// Extra header fields for every request of every endpoint, whatever its host (e.g.
        /// `Authorization`); never logged. In a chain of services, give each endpoint its own
        /// credentials instead. A redirect to another origin carries none of them. A field
        /// whose name is not a token, or whose value holds a line break or another control
        /// character, fails the fetch before anything is sent (``FetchError/Kind/invalidRequest``,
        /// naming the field, never its value).
        public var headers: [String: String]
        /// The keys answers must be signed with, and what verifies them; nil (the default):
        /// answers are not checked. Set through `trustedKeys` (FeatureFlagsSigning).
        package var signatureTrust: SignatureTrust?

        /// A configuration.
        public init(
            budget: Duration = .seconds(2), maxResponseBytes: Int = 1 << 20, allowInsecureHTTP: Bool = false,
            headers: [String: String] = [:]
        ) {
            self.budget = budget
            self.maxResponseBytes = maxResponseBytes
            self.allowInsecureHTTP = allowInsecureHTTP
            self.headers = headers
        }
    }

    /// The wire formats spoken, in order of preference: a fetch tries them in turn and the
    /// first successful answer wins.
    public let endpoints: [FlagEndpoint]

    /// Whether every endpoint's request for `context` goes to this machine (`localhost`,
    /// `127.0.0.0/8`, `::1`): no network path is needed for it. False when a request cannot be
    /// made (the fetch will say why).
    func asksOnlyThisMachine(for context: EvaluationContext) -> Bool {
        endpoints.allSatisfy { endpoint in
            guard let request = try? endpoint.request(for: context, etag: nil), let host = request.url.host else { return false }
            return URLPolicy.isLoopback(host)
        }
    }
    /// How fetches are made.
    public let configuration: Configuration

    /// The keys answers must be signed with (nil: answers are not checked), or why the
    /// configured ones are unusable (every fetch then fails with it).
    var trust: TrustedVerifier? { policy.trust }
    /// Whether answers must be signed (``trust`` is set).
    var checksSignatures: Bool { policy.checksSignatures }
    private let transport: any FlagTransport
    private let ownsTransport: Bool
    private let clock: any ElapsedClock
    private let now: @Sendable () -> Date

    /// A fetcher for one endpoint.
    /// - Parameters:
    ///   - transport: nil for a private `URLSession` transport, shut down with this fetcher.
    ///   - clock: measures the budget (inject a test clock in tests).
    ///   - now: stamps `fetchedAt` and resolves HTTP-date `Retry-After` values.
    public convenience init(
        endpoint: FlagEndpoint, configuration: Configuration = Configuration(), transport: (any FlagTransport)? = nil,
        clock: any Clock<Duration> = ContinuousClock(), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(endpoints: [endpoint], configuration: configuration, transport: transport, clock: clock, now: now)
    }

    /// A fetcher for one of the package's wire formats (tools and tests).
    package convenience init(
        endpoint: some EndpointFormat, configuration: Configuration = Configuration(), transport: (any FlagTransport)? = nil,
        clock: any Clock<Duration> = ContinuousClock(), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(endpoints: [FlagEndpoint(endpoint)], configuration: configuration, transport: transport, clock: clock, now: now)
    }

    /// A fetcher for a chain of the package's wire formats (tools and tests).
    package convenience init(
        endpoints: [any EndpointFormat], configuration: Configuration = Configuration(), transport: (any FlagTransport)? = nil,
        clock: any Clock<Duration> = ContinuousClock(), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(
            endpoints: endpoints.map { FlagEndpoint($0) }, configuration: configuration, transport: transport, clock: clock, now: now)
    }

    /// A fetcher for an ordered chain of endpoints — for example OFREP first, a static CDN
    /// document second. A fetch tries them in order within one budget and the first
    /// successful answer wins; when every endpoint fails, the first one's error is reported
    /// (it is the service the app is meant to talk to). An empty list fails every fetch with
    /// a clear error.
    public init(
        endpoints: [FlagEndpoint], configuration: Configuration = Configuration(), transport: (any FlagTransport)? = nil,
        clock: any Clock<Duration> = ContinuousClock(), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.endpoints = endpoints.isEmpty ? [FlagEndpoint(UnavailableEndpoint())] : endpoints
        self.configuration = configuration
        policy = DevicePolicy(trust: configuration.signatureTrust?.verifier, endpoints: endpoints)
        // Unwrapped before storing: copying an optional existential makes the runtime set up
        // its type the first time, at every app's launch.
        if let transport {
            self.transport = transport
            ownsTransport = false
        } else {
            self.transport = URLSessionTransport(allowInsecureRedirects: configuration.allowInsecureHTTP)
            ownsTransport = true
        }
        self.clock = makeElapsedClock(clock)
        self.now = now
    }

    deinit {
        if ownsTransport { transport.shutdown() }
    }

    /// How this fetcher's answers are checked and read on the device: the same policy the
    /// Last-Known-Good reader applies to the file.
    let policy: DevicePolicy
    /// Whether an endpoint of the chain sends rules evaluated on the device.
    var evaluatesLocally: Bool { policy.evaluatesLocally }
    /// The chain's first endpoint that sends rules evaluated on the device.
    var localEvaluation: (any LocalEvaluationEndpoint)? { policy.localEvaluation }

    /// `links` kept in the store by an earlier launch, as this fetcher trusts them: a link gets
    /// the fetcher's credentials only when it is on the origin of a request this fetcher's
    /// endpoints build for `context` — decided here, from the app's configuration, never from
    /// the file.
    /// The streams the chain's endpoints open themselves (LaunchDarkly's) are added: they are
    /// never stored, but built again from the endpoint and `context`.
    func restoring(_ links: [EventStreamLink], for context: EvaluationContext) -> [EventStreamLink] {
        let origins = Set(endpoints.compactMap { endpoint -> String? in
            guard let request = try? endpoint.request(for: context, etag: nil) else { return nil }
            return EventStreamLink.origin(of: request.url)
        })
        var restored = links.filter { $0.connection == nil }.map { link in
            let same = EventStreamLink.origin(of: link.url).map(origins.contains) ?? false
            return EventStreamLink(url: link.url, inactivityDelay: link.inactivityDelay, endpoint: link.endpoint, sameOrigin: same)
        }
        for link in ownStreams(for: context) where !restored.contains(link) { restored.append(link) }
        return restored
    }

    /// The streams the chain's endpoints open themselves for `context`, attributed to them.
    func ownStreams(for context: EvaluationContext) -> [EventStreamLink] {
        endpoints.indices.compactMap { index in
            endpoints[index].format.asStreaming?.streamLink(for: context)?.advertised(by: scope(of: index))
        }
    }

    /// Flag values a stream brought (a LaunchDarkly `put`, or the values after a `patch` or
    /// `delete`), read as the endpoint at `scope` reads its polling answer: the same snapshot a
    /// fetch would make, with no entity tag (no request validated it).
    func streamed(_ flags: [String: FlagValue], from endpointScope: String?, for context: EvaluationContext) -> FetchResult {
        // Values a stream pushes are not signed documents: with trusted keys they are refused
        // (the stream's signals that ask for a fetch still work; the fetch is verified).
        if checksSignatures {
            return .failed(.signatureRejected("values pushed by a stream are not a signed document"))
        }
        guard let index = endpoints.indices.first(where: { scope(of: $0) == endpointScope }),
            let endpoint = endpoints[index].format.asStreaming
        else {
            return .failed(.decode(FlagError(.general, "streamed values from an endpoint this fetcher does not have")))
        }
        do throws(FlagError) {
            let decoded = try endpoint.decode(streamed: flags, for: context)
            guard let entries = decoded.flags else {
                return .failed(.decode(FlagError(.parseError, "streamed values without flags")))
            }
            var snapshot = FlagSnapshot(
                flags: entries, version: decoded.version, fetchedAt: now(), ttl: decoded.ttl, contextFingerprint: context.fingerprint)
            snapshot.missingFlagsAreOff = decoded.missingFlagsAreOff
            return .fetched(snapshot, etag: nil, streams: decoded.streams.map { $0.advertised(by: scope(of: index)) })
        } catch {
            return .failed(.decode(error))
        }
    }

    /// Transfers of this fetcher's own transport not yet ended (nil for an injected transport):
    /// see ``URLSessionTransport/transfersInFlight``.
    package var transfersInFlight: Int? { (transport as? URLSessionTransport)?.transfersInFlight }

    /// The scope an entity tag from the endpoint at `index` carries.
    func scope(of index: Int) -> String { "\(index)/\(endpoints[index].name)" }

    /// Fetches `context`'s flags. `ifNoneMatch` is the tag of the snapshot the caller holds: it
    /// is sent to the endpoint that issued it, and a "not modified" answer means that snapshot
    /// is still current. Never throws: failures are ``FetchResult/failed(_:)``; a cancelled
    /// caller gets ``FetchError/cancelled``.
    ///
    /// `hint` is the metadata of the change-stream event that triggered this fetch: it is sent
    /// (as `flagConfigEtag` / `flagConfigLastModified` query parameters) to the endpoint whose
    /// stream sent it, with this request only.
    package func fetch(
        _ context: EvaluationContext, ifNoneMatch: EntityTag? = nil, hint: RefetchHint? = nil, signedNoEarlierThan: Date? = nil
    ) async -> FetchResult {
        // Bounded: a budget of centuries is "no budget", and must not overflow the clock.
        let budget = configuration.budget.boundedWait
        let end = clock.now() + budget
        var firstError: FetchError?
        for index in endpoints.indices {
            // The first endpoint starts with the whole budget; the others with what is left.
            let remaining = index == 0 ? budget : end - clock.now()
            guard remaining > .zero else { break }
            let left = endpoints.count - index
            let share = left == 1 ? remaining : remaining / left
            do throws(FetchError) {
                return try await fetch(
                    context, from: index, within: share, ifNoneMatch: ifNoneMatch, hint: hint, signedNoEarlierThan: signedNoEarlierThan)
            } catch {
                if error == .cancelled || Task.isCancelled { return .failed(.cancelled) }
                if firstError == nil { firstError = error }
            }
        }
        return .failed(firstError ?? .timeout(budget))
    }

    /// Cancels nothing in flight by itself (callers cancel their tasks) but, if it owns it,
    /// shuts the transport down: later fetches fail with ``FetchError/cancelled``. Idempotent.
    public func shutdown() {
        if ownsTransport { transport.shutdown() }
    }

    private func fetch(
        _ context: EvaluationContext, from index: Int, within share: Duration, ifNoneMatch: EntityTag?, hint: RefetchHint?,
        signedNoEarlierThan: Date?
    ) async throws(FetchError) -> FetchResult {
        let endpoint = endpoints[index]
        let scope = scope(of: index)
        let condition = ifNoneMatch?.endpoint == scope ? ifNoneMatch?.value : nil
        var request: FlagRequest
        do {
            request = try endpoint.request(for: context, etag: condition)
        } catch {
            throw .invalidRequest(error)
        }
        for (name, value) in configuration.headers where request.headers[name] == nil { request.headers[name] = value }
        if let problem = HeaderFieldCheck.problem(in: request.headers) { throw .invalidRequest(FlagError(.general, problem)) }
        if let hint, hint.endpoint == nil || hint.endpoint == scope { request.url = hint.apply(to: request.url) }
        try URLPolicy.check(request.url, allowInsecureHTTP: configuration.allowInsecureHTTP)

        var response = try await send(request, within: share)
        var stamp: SignatureStamp?
        if response.status == 304 { return try notModified(sent: condition) }
        guard (200..<300).contains(response.status) else {
            // OFREP's bulk contract names the header Retry-Later; accept both spellings.
            let header = response.header("retry-after") ?? response.header("retry-later")
            let retryAfter = header.flatMap { RetryAfter.delay($0, now: now()) }
            throw .httpStatus(response.status, retryAfter: retryAfter, detail: endpoint.failureDetail(response))
        }
        if let trust {
            // Before anything is read: a document the operator did not sign is never decoded.
            let keys: any DocumentVerifier
            switch trust {
            case .ready(let trusted): keys = trusted
            case .unusable(let problem): throw .signatureRejected(problem.message)
            }
            switch keys.verify(response.body) {
            case .success(let verified):
                try Self.checkNotRolledBack(verified.issuedAt, heldSince: signedNoEarlierThan)
                stamp = SignatureStamp(
                    keyID: verified.keyID, issuedAt: verified.issuedAt, expiresAt: verified.expiresAt, envelope: response.body)
                response.body = verified.payload
            case .failure(let failure): throw .signatureRejected(failure.description)
            }
        }
        if let local = endpoint.format.asLocalEvaluation {
            return try evaluateLocally(response, from: local, for: context, scope: scope, stamp: stamp)
        }
        let decoded: DecodedFlags
        do {
            decoded = try endpoint.decode(response, for: context)
        } catch {
            throw .decode(error)
        }
        guard let flags = decoded.flags else { return try notModified(sent: condition) }
        var snapshot = FlagSnapshot(
            flags: flags, version: decoded.version, fetchedAt: now(), ttl: decoded.ttl, contextFingerprint: context.fingerprint)
        snapshot.signature = stamp
        snapshot.missingFlagsAreOff = decoded.missingFlagsAreOff
        return .fetched(
            snapshot, etag: response.header("etag").map { EntityTag($0, endpoint: scope) },
            streams: decoded.streams.map { $0.advertised(by: scope) })
    }

    /// Rules instead of values: compiled, evaluated for `context`, and carried with the
    /// snapshot so the caller can keep them.
    private func evaluateLocally(
        _ response: FlagResponse, from endpoint: any LocalEvaluationEndpoint, for context: EvaluationContext, scope: String,
        stamp: SignatureStamp?
    ) throws(FetchError) -> FetchResult {
        let fetchedAt = now()
        let etag = response.header("etag").map { EntityTag($0, endpoint: scope) }
        let read: (rules: any HeldRules, streams: [EventStreamLink])
        do {
            read = try endpoint.rules(from: response, etag: etag, fetchedAt: fetchedAt, envelope: stamp?.envelope)
        } catch {
            throw .decode(error)
        }
        var snapshot = read.rules.snapshot(for: context, at: fetchedAt)
        snapshot.signature = stamp
        return .fetched(snapshot, etag: etag, streams: read.streams.map { $0.advertised(by: scope) })
    }

    /// Refuses a document signed earlier than the one held (a rollback: an operator's
    /// deliberate one is a new document, signed now), or one without a signing time when the
    /// held one has one.
    static func checkNotRolledBack(_ issuedAt: Date?, heldSince held: Date?) throws(FetchError) {
        guard let held else { return }
        guard let issuedAt else {
            throw .signatureRejected("the document has no signing time (iat) and the one held was signed at \(ISO8601.string(held)): refused as a possible rollback")
        }
        guard issuedAt >= held else {
            throw .signatureRejected(
                "rollback: the document was signed at \(ISO8601.string(issuedAt)), before the one held (\(ISO8601.string(held)))")
        }
    }

    /// "Not modified" is an answer only to a conditional request.
    private func notModified(sent condition: String?) throws(FetchError) -> FetchResult {
        guard condition != nil else {
            throw .decode(FlagError(.general, "\"not modified\" to a request without If-None-Match"))
        }
        return .notModified
    }

    /// Races the transport against `share`; the loser is cancelled.
    private func send(_ request: FlagRequest, within share: Duration) async throws(FetchError) -> FlagResponse {
        let transport = self.transport
        let clock = self.clock
        let maxBytes = configuration.maxResponseBytes
        let deadline = clock.now() + share
        // Linux URLSession timeouts are whole seconds, reset by every byte: a backstop only.
        // With an injected clock (a test's), time is that clock's: the real-time backstop is
        // then only for a transport that never answers, so that a machine that stalls for
        // seconds does not end a fetch the clock has not ended.
        let backstop = clock.isSystemClock ? share.seconds.rounded(.up) + 1 : max(share.seconds.rounded(.up) + 1, 120)
        do {
            return try await withThrowingTaskGroup(of: FlagResponse?.self) { group in
                group.addTask { try await transport.send(request, maxBytes: maxBytes, timeout: backstop) }
                group.addTask {
                    try await clock.sleep(until: deadline)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let response = first else {
                    throw FetchError.timeout(share)
                }
                return response
            }
        } catch let error as FetchError {
            throw error
        } catch {
            throw .cancelled
        }
    }
}

/// What one fetch came to.
package indirect enum FetchResult: Sendable, Equatable {
    /// New flags, stamped with the fetch time and the context's fingerprint, the entity tag
    /// that validates them (if the service sent one), and the change streams the answer
    /// advertised, attributed to the endpoint that answered.
    case fetched(FlagSnapshot, etag: EntityTag?, streams: [EventStreamLink] = [])
    /// The service says the snapshot whose tag was sent is still current.
    case notModified
    /// No answer that could be used.
    case failed(FetchError)
}

/// Stands in for an empty endpoint list: every fetch fails with a clear error.
struct UnavailableEndpoint: EndpointFormat {
    var name: String { "none" }
    func request(for context: EvaluationContext, etag: String?) throws(FlagError) -> FlagRequest {
        throw FlagError(.general, "no endpoint configured")
    }
    func decode(_ response: FlagResponse, for context: EvaluationContext) throws(FlagError) -> DecodedFlags {
        throw FlagError(.general, "no endpoint configured")
    }
}
