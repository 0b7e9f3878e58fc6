import Foundation

/// Fetches one snapshot for a context from a flag service, through a ``FlagEndpoint`` and a
/// ``FlagTransport`` (URLSession by default).
///
/// - **Deadline.** Each fetch has a whole-call deadline (default 2 s) that the client enforces
///   itself by racing the request against its clock and cancelling the loser — Linux
///   URLSession timeouts are whole, idle-based seconds. Sub-second deadlines work.
/// - **ETags.** The client remembers the entity tag of the last snapshot it returned per
///   context and sends `If-None-Match`; a 304 returns ``FlagFetchResult/notModified``
///   without decoding anything.
/// - **One at a time.** Concurrent fetches for the same context share one request.
/// - **HTTPS** is required except for loopback hosts, unless ``Configuration/allowInsecureHTTP``.
/// - **Headers** from the configuration (authorisation) go with every request and never
///   appear in errors or events.
public final class OnlineClient: Sendable {
    /// How the client fetches.
    public struct Configuration: Sendable {
        /// The whole-call deadline. Default 2 s.
        public var deadline: Duration
        /// The largest body accepted, counted on the bytes received. Default 1 MiB.
        public var maxResponseBytes: Int
        /// Allow plain HTTP to hosts that are not loopback. Default off.
        public var allowInsecureHTTP: Bool
        /// Extra header fields for every request (e.g. `Authorization`); never logged.
        public var headers: [String: String]

        /// A configuration.
        public init(
            deadline: Duration = .seconds(2), maxResponseBytes: Int = 1 << 20, allowInsecureHTTP: Bool = false,
            headers: [String: String] = [:]
        ) {
            self.deadline = deadline
            self.maxResponseBytes = maxResponseBytes
            self.allowInsecureHTTP = allowInsecureHTTP
            self.headers = headers
        }
    }

    /// The wire formats spoken, in order of preference: a fetch tries them in turn and the
    /// first successful answer wins (see ``init(endpoints:configuration:transport:clock:now:)``).
    public let endpoints: [any FlagEndpoint]
    /// The first (preferred) endpoint.
    public var endpoint: any FlagEndpoint { endpoints[0] }
    /// How fetches are made.
    public let configuration: Configuration

    private let transport: any FlagTransport
    private let ownsTransport: Bool
    private let clock: any Clock<Duration>
    private let now: @Sendable () -> Date
    private struct InFlight {
        let id: Int
        let task: Task<Result<FlagFetchResult, FetchError>, Never>
        var waiters: Int
    }
    private struct State {
        var etags: [String: String] = [:]
        var inFlight: [String: InFlight] = [:]
        var nextID = 0
        var closed = false
    }
    private let state = Locked(State())

    /// A client for `endpoint`.
    /// - Parameters:
    ///   - transport: nil for a private ``URLSessionTransport``, shut down with this client.
    ///   - clock: measures the deadline.
    ///   - now: stamps `fetchedAt` and resolves HTTP-date `Retry-After` values.
    public convenience init(
        endpoint: any FlagEndpoint, configuration: Configuration = Configuration(), transport: (any FlagTransport)? = nil,
        clock: any Clock<Duration> = ContinuousClock(), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(endpoints: [endpoint], configuration: configuration, transport: transport, clock: clock, now: now)
    }

    /// A client for an ordered chain of endpoints — for example OFREP first, a static CDN
    /// document second. A fetch tries them in order, each within the deadline, and the first
    /// successful answer wins. Each endpoint keeps its own ETag per context; when one answers
    /// with new values, the others' tags for that context are dropped, so a 304 always
    /// refers to the values being served. When every endpoint fails, the first one's error
    /// is reported (it is the service the app is meant to talk to).
    /// An empty list is treated as a failing endpoint.
    public init(
        endpoints: [any FlagEndpoint], configuration: Configuration = Configuration(), transport: (any FlagTransport)? = nil,
        clock: any Clock<Duration> = ContinuousClock(), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.endpoints = endpoints.isEmpty ? [UnavailableEndpoint()] : endpoints
        self.configuration = configuration
        self.transport = transport ?? URLSessionTransport(allowInsecureRedirects: configuration.allowInsecureHTTP)
        self.ownsTransport = transport == nil
        self.clock = clock
        self.now = now
    }

    deinit {
        if ownsTransport { transport.shutdown() }
    }

    /// The entity tag sent with the next fetch for `context` to the first endpoint.
    public func etag(for context: EvaluationContext) -> String? {
        state.withLock { $0.etags[Self.etagKey(0, context)] }
    }

    /// Sets (or, with nil, forgets) the first endpoint's entity tag for `context` — for
    /// instance to the tag of the Last-Known-Good snapshot loaded from disk, or to nil to
    /// force a full fetch. The other endpoints' tags for `context` are dropped.
    public func setETag(_ etag: String?, for context: EvaluationContext) {
        state.withLock { s in
            for index in endpoints.indices { s.etags[Self.etagKey(index, context)] = nil }
            s.etags[Self.etagKey(0, context)] = etag
        }
    }

    private static func etagKey(_ index: Int, _ context: EvaluationContext) -> String { "\(index)|\(context.fingerprint)" }

    /// How many fetches are in flight now (at most one per context).
    public var fetchesInFlight: Int { state.withLock { $0.inFlight.count } }

    /// Fetches `context`'s flags. A fetch already in flight for the same context is joined,
    /// not repeated. When a caller is cancelled and no other caller waits for the same
    /// request, the request is cancelled and the call ends with ``FetchError/cancelled``; a
    /// cancelled caller that shares its request with others gets it when that request ends.
    public func fetch(for context: EvaluationContext) async throws(FetchError) -> FlagFetchResult {
        let key = context.fingerprint
        let joined: InFlight? = state.withLock { s in
            if s.closed { return nil }
            if var existing = s.inFlight[key] {
                existing.waiters += 1
                s.inFlight[key] = existing
                return existing
            }
            s.nextID += 1
            let id = s.nextID
            let task = Task {
                let result = await self.perform(context)
                self.state.withLock { s in
                    if s.inFlight[key]?.id == id { s.inFlight[key] = nil }
                }
                return result
            }
            let entry = InFlight(id: id, task: task, waiters: 1)
            s.inFlight[key] = entry
            return entry
        }
        guard let flight = joined else { throw .cancelled }
        let waiting = Locked(true)
        let result = await withTaskCancellationHandler {
            await flight.task.value
        } onCancel: {
            self.stopWaiting(key, flight: flight, waiting: waiting, cancelling: true)
        }
        stopWaiting(key, flight: flight, waiting: waiting, cancelling: false)
        if Task.isCancelled, case .failure = result { throw .cancelled }
        return try result.get()
    }

    /// One caller stops waiting (once); when the last waiter of a request still running is
    /// cancelled, the request is cancelled too.
    private func stopWaiting(_ key: String, flight: InFlight, waiting: Locked<Bool>, cancelling: Bool) {
        let wasWaiting = waiting.withLock { w in
            defer { w = false }
            return w
        }
        guard wasWaiting else { return }
        let cancelRequest: Bool = state.withLock { s in
            guard var entry = s.inFlight[key], entry.id == flight.id else { return false }
            entry.waiters -= 1
            guard cancelling, entry.waiters == 0 else {
                s.inFlight[key] = entry
                return false
            }
            // A cancelled request must not be joined by a later caller: it ends in `.cancelled`.
            s.inFlight[key] = nil
            return true
        }
        if cancelRequest { flight.task.cancel() }
    }

    /// Cancels every fetch in flight and, if it owns it, shuts the transport down. Later
    /// fetches fail with ``FetchError/cancelled``. Idempotent.
    public func shutdown() {
        let tasks = state.withLock { s -> [Task<Result<FlagFetchResult, FetchError>, Never>] in
            s.closed = true
            defer { s.inFlight.removeAll() }
            return s.inFlight.values.map(\.task)
        }
        for task in tasks { task.cancel() }
        if ownsTransport { transport.shutdown() }
    }

    private func perform(_ context: EvaluationContext) async -> Result<FlagFetchResult, FetchError> {
        do throws(FetchError) {
            return .success(try await performThrowing(context))
        } catch {
            return .failure(error)
        }
    }

    /// Tries the endpoints in order; the first success wins.
    private func performThrowing(_ context: EvaluationContext) async throws(FetchError) -> FlagFetchResult {
        var firstError: FetchError?
        for index in endpoints.indices {
            do throws(FetchError) {
                return try await fetch(context, from: index)
            } catch {
                if error == .cancelled || Task.isCancelled { throw .cancelled }
                if firstError == nil { firstError = error }
            }
        }
        throw firstError ?? .cancelled
    }

    private func fetch(_ context: EvaluationContext, from index: Int) async throws(FetchError) -> FlagFetchResult {
        let endpoint = endpoints[index]
        let etag = state.withLock { $0.etags[Self.etagKey(index, context)] }
        var request: FlagRequest
        do {
            request = try endpoint.request(for: context, etag: etag)
        } catch {
            throw .invalidRequest(error)
        }
        for (name, value) in configuration.headers where request.headers[name] == nil { request.headers[name] = value }
        try URLPolicy.check(request.url, allowInsecureHTTP: configuration.allowInsecureHTTP)

        let response = try await sendWithinDeadline(request)
        if response.status == 304 { return .notModified }
        guard (200..<300).contains(response.status) else {
            // OFREP's bulk contract names the header Retry-Later; accept both spellings.
            let header = response.header("retry-after") ?? response.header("retry-later")
            let retryAfter = header.flatMap { RetryAfter.delay($0, now: now()) }
            throw .httpStatus(response.status, retryAfter: retryAfter, detail: endpoint.failureDetail(response))
        }
        let result: FlagFetchResult
        do {
            result = try endpoint.decode(response, for: context, fetchedAt: now())
        } catch {
            throw .decode(error)
        }
        if case .snapshot(let snapshot) = result {
            let tag = snapshot.etag ?? response.header("etag")
            state.withLock { s in
                for other in endpoints.indices { s.etags[Self.etagKey(other, context)] = nil }
                s.etags[Self.etagKey(index, context)] = tag
            }
        }
        return result
    }

    /// Races the transport against the deadline; the loser is cancelled.
    private func sendWithinDeadline(_ request: FlagRequest) async throws(FetchError) -> FlagResponse {
        let deadline = configuration.deadline
        let transport = self.transport
        let clock = self.clock
        let maxBytes = configuration.maxResponseBytes
        let backstop = deadline.seconds + 1
        do {
            return try await withThrowingTaskGroup(of: FlagResponse?.self) { group in
                group.addTask { try await transport.send(request, maxBytes: maxBytes, timeout: backstop) }
                group.addTask {
                    try await clock.sleep(for: deadline)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let response = first else {
                    throw FetchError.timeout(deadline)
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

/// Stands in for an empty endpoint list: every fetch fails with a clear error.
struct UnavailableEndpoint: FlagEndpoint {
    var name: String { "none" }
    func request(for context: EvaluationContext, etag: String?) throws(FlagEndpointError) -> FlagRequest {
        throw FlagEndpointError(.general, "no endpoint configured")
    }
    func decode(_ response: FlagResponse, for context: EvaluationContext, fetchedAt: Date) throws(FlagEndpointError) -> FlagFetchResult {
        throw FlagEndpointError(.general, "no endpoint configured")
    }
}
