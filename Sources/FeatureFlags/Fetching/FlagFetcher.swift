public import Foundation

/// Fetches a context's flags through an ordered chain of ``FlagEndpoint``s and a
/// ``FlagTransport`` (URLSession by default). Stateless: the caller passes what it holds.
///
/// - **One budget** (default 2 s) per fetch, shared equally among the endpoints still to try.
/// - **Entity tags** go only to the endpoint that sent them.
/// - **HTTPS** is required except for loopback hosts, unless ``Configuration/allowInsecureHTTP``.
/// - **Headers** (e.g. authorisation) go with every request and never appear in errors or events.
public final class FlagFetcher: Sendable {
    /// How the fetcher fetches.
    public struct Configuration: Sendable {
        /// The budget of one whole fetch, all endpoints included. Default 2 s.
        public var budget: Duration
        /// The largest body accepted, counted on the bytes received. Default 1 MiB.
        public var maxResponseBytes: Int
        /// Allow plain HTTP to hosts that are not loopback. Default off.
        public var allowInsecureHTTP: Bool
        /// Extra header fields (e.g. `Authorization`) sent to every endpoint's host, never logged nor
        /// sent on cross-origin redirects. Invalid fields fail the fetch (``FetchError/Kind/invalidRequest``).
        public var headers: [String: String]
        /// How several endpoints combine: a chain (default), or services asked at once and combined per flag.
        public var strategy: ServiceStrategy
        /// The keys answers must be signed with; nil (default): unchecked. Set via FeatureFlagsSigning.
        package var signatureTrust: SignatureTrust?

        /// A configuration.
        public init(
            budget: Duration = .seconds(2), maxResponseBytes: Int = 1 << 20, allowInsecureHTTP: Bool = false,
            headers: [String: String] = [:], strategy: ServiceStrategy = .chain
        ) {
            self.budget = budget
            self.maxResponseBytes = maxResponseBytes
            self.allowInsecureHTTP = allowInsecureHTTP
            self.headers = headers
            self.strategy = strategy
        }
    }

    /// The endpoints, in order of preference; the first successful answer wins.
    public let endpoints: [FlagEndpoint]

    /// Whether every endpoint's request for `context` goes to a loopback host; false if unbuildable.
    func asksOnlyThisMachine(for context: EvaluationContext) -> Bool {
        endpoints.allSatisfy { endpoint in
            guard let request = try? endpoint.request(for: context, etag: nil), let host = request.url.host else { return false }
            return URLPolicy.isLoopback(host)
        }
    }
    /// How fetches are made.
    public let configuration: Configuration

    private let transport: any FlagTransport
    private let ownsTransport: Bool
    private let clock: any ElapsedClock
    private let now: @Sendable () -> Date

    /// A fetcher for one endpoint; a nil `transport` means a private URLSession shut down with it.
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

    /// A fetcher for an ordered chain of endpoints: the first success within the budget wins; if all
    /// fail, the first endpoint's error is reported. An empty list fails every fetch.
    public init(
        endpoints: [FlagEndpoint], configuration: Configuration = Configuration(), transport: (any FlagTransport)? = nil,
        clock: any Clock<Duration> = ContinuousClock(), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.endpoints = endpoints.isEmpty ? [FlagEndpoint(UnavailableEndpoint())] : endpoints
        self.configuration = configuration
        policy = DevicePolicy(trust: configuration.signatureTrust?.verifier, endpoints: endpoints, strategy: configuration.strategy)
        // Unwrapped before storing: an optional existential costs runtime set-up at launch.
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

    /// How answers are checked: the same policy the Last-Known-Good reader applies.
    let policy: DevicePolicy

    /// Stored `links` as this fetcher trusts them (credentials only on its own request's origin
    /// for `context`, never as the file says), plus the endpoints' own streams.
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

    /// Values a stream pushed, read as the endpoint at `endpointScope` reads a poll (no entity tag).
    func streamed(_ flags: [String: FlagValue], from endpointScope: String?, for context: EvaluationContext) -> FetchResult {
        // Pushed values are unsigned: refused with trusted keys (triggered fetches are verified).
        if policy.checksSignatures {
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

    /// Unfinished transfers of this fetcher's own transport (nil for an injected one).
    package var transfersInFlight: Int? { (transport as? URLSessionTransport)?.transfersInFlight }

    /// The scope an entity tag from the endpoint at `index` carries.
    func scope(of index: Int) -> String { "\(index)/\(endpoints[index].name)" }

    /// Fetches `context`'s flags; `ifNoneMatch` goes to the endpoint that issued it, `hint` (from a
    /// change-stream event) to the endpoint whose stream sent it. Never throws: failures are
    /// ``FetchResult/failed(_:)``, cancellation ``FetchError/cancelled``.
    /// With `service`, only the endpoint at that index is asked, within the whole budget (a set's services are asked at once).
    package func fetch(
        _ context: EvaluationContext, service: Int? = nil, ifNoneMatch: EntityTag? = nil, hint: RefetchHint? = nil,
        signedNoEarlierThan: Date? = nil
    ) async -> FetchResult {
        // Bounded: a budget of centuries is "no budget", and must not overflow the clock.
        let budget = configuration.budget.boundedWait
        let end = clock.now() + budget
        var firstError: FetchError?
        for index in service.map({ [$0] }) ?? Array(endpoints.indices) {
            let remaining = index == 0 ? budget : end - clock.now()
            guard remaining > .zero else { break }
            let left = service == nil ? endpoints.count - index : 1
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

    /// Shuts an owned transport down; later fetches fail with ``FetchError/cancelled``. Idempotent.
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
        if let trust = policy.trust {
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

    /// Rules instead of values: evaluated for `context` and carried with the snapshot.
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

    /// Refuses a rollback: a document signed before the held one, or with no signing time when it has one.
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
        // URLSession timeouts are a backstop only (on Linux whole seconds, reset by every byte).
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
    /// New stamped flags, their entity tag if any, and the change streams the answer advertised.
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
