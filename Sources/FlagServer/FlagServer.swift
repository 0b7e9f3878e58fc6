public import FeatureFlags
package import FeatureFlagsFlagd
import FeatureFlagsSigning
public import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback HTTP/1.1 flag server for tests and for rehearsing outages: it serves a
/// ``ServerDocument`` (from memory or from a file it reloads when the file changes),
/// evaluated per request for the asking context, with strong ETags and 304s, a request log
/// to assert on, and faults switchable at run time.
///
/// Routes: `POST /flags` with `{"context": {…}}`; `GET /flags/<value>.json` (the value sets
/// ``Configuration/pathAttribute``, `venue` by default); `GET /flags?attr=value&…`. Query
/// parameters add attributes, `targetingKey` sets the targeting key. The same document in
/// other services' shapes (``WireFormat``): OFREP's bulk (`POST /ofrep/v1/evaluate/flags`) and
/// single-flag (`POST /ofrep/v1/evaluate/flags/<key>`) evaluation, LaunchDarkly's polling
/// (`/msdk/evalx/…`) and stream (`/meval`), Firebase's fetch (`…:fetch`), Unleash's frontend
/// API (`GET /api/frontend`); the change stream `GET /events`; flagd rules at
/// `GET /flagd/flags.json` when given.
///
/// The server starts in its initialiser, on its own threads (POSIX sockets, no
/// dependencies), and ``stop()`` ends every thread and connection.
public final class FlagServer: Sendable {
    private enum Source: Sendable {
        case memory
        case file(path: String)
    }

    struct State {
        var document: ServerDocument {
            didSet {
                revision += 1
                rendered.removeAll()
            }
        }
        /// Bumped on every document change; rendered answers carry the revision they came from.
        var revision = 0
        /// Evaluated, serialised answers and their ETags per context fingerprint, so a poll
        /// that ends in 304 costs the server a lookup, not an evaluation and a hash.
        var rendered: [RenderKey: (revision: Int, body: [UInt8], etag: String)] = [:] {
            didSet { if rendered.isEmpty { renderedBytes = 0 } }
        }
        /// The bodies' total size: the cache is emptied rather than grow past 256 answers or 64 MB.
        var renderedBytes = 0
        /// The flagd document served at `/flagd/flags.json`, with its entity tag.
        var flagd: (body: [UInt8], etag: String)? {
            didSet { revision += 1 }
        }
        /// The key every flag answer is signed with (JWS), and its key id; nil: unsigned.
        var signer: (seed: [UInt8], publicKey: [UInt8], keyID: String?, issuedAt: Date?, expiresAt: Date?)? {
            didSet {
                revision += 1
                rendered.removeAll()
            }
        }
        var fileStamp: FileStamp?
        var reloads = 0
        var lastReloadError: String?
        var fault: Fault?
        var streamFault: StreamFault?
        var latency: Duration = .zero
        var failRate: Double = 0
        var log: RequestLog
        var connections = ConnectionTable()
        var accepts = AcceptRate()
        /// Turns of every stream's loop: a stream that spun would show here.
        var streamWakeups = 0
        var stopping = false
    }

    /// The port the server listens on.
    public let port: UInt16
    /// How it listens.
    public let configuration: Configuration

    private let source: Source
    let state: Locked<State>
    /// Held for the whole of a reload of the served file.
    private let reloading = Locked<Void>(())
    /// Held while an answer is rendered: one render at a time, so clients asking for the same
    /// large answer at once wait for the first render and take it from the cache, instead of
    /// each building its own copy (32 renders of a 5 MB answer held 300 MB).
    private let renderGate = Locked(())
    private let listenFD: Int32
    let stopPipe: (read: Int32, write: Int32)
    /// Change streams wait on it; every document change (and `stop()`) broadcasts.
    let changes = ChangeSignal()
    private let threads = DispatchGroup()
    private let onRequest: (@Sendable (RequestRecord) -> Void)?
    private let onReload: (@Sendable (Result<ServerDocument, FlagError>) -> Void)?
    /// How the served file is read.
    private let readFile: @Sendable (String) throws -> [UInt8]

    /// Serves `document` from memory.
    /// - Parameter onRequest: called after each request is answered (for logging).
    public convenience init(
        document: ServerDocument, configuration: Configuration = Configuration(),
        onRequest: (@Sendable (RequestRecord) -> Void)? = nil
    ) throws {
        try self.init(source: .memory, document: document, configuration: configuration, onRequest: onRequest)
    }

    /// Serves `document` from memory on the port `hold` reserved (its
    /// ``FlagServer/stopHoldingPort()``), taken over while the reservation still holds it: the
    /// port is never free between a server going down and one coming back. Release `hold`
    /// afterwards. `configuration.port` is ignored.
    package convenience init(
        document: ServerDocument, configuration: Configuration = Configuration(), returningTo hold: PortReservation
    ) throws {
        var configuration = configuration
        configuration.port = hold.port
        try self.init(source: .memory, document: document, configuration: configuration, onRequest: nil, sharing: true)
    }

    /// Serves the server document in the JSON file at `path`, reloading it whenever it
    /// changes; a change that does not parse keeps the previous document (see ``lastReloadError``).
    /// - Parameter onReload: called after each reload attempt: the new document, or why the
    ///   changed file was not used.
    public convenience init(
        file path: String, configuration: Configuration = Configuration(),
        onRequest: (@Sendable (RequestRecord) -> Void)? = nil,
        onReload: (@Sendable (Result<ServerDocument, FlagError>) -> Void)? = nil
    ) throws {
        try self.init(file: path, configuration: configuration, onRequest: onRequest, onReload: onReload, reading: { try FileIO.read($0) })
    }

    /// Serves the file at `path` as above, reading it with `read` (tests pause a reload there).
    package convenience init(
        file path: String, configuration: Configuration = Configuration(),
        onRequest: (@Sendable (RequestRecord) -> Void)? = nil,
        onReload: (@Sendable (Result<ServerDocument, FlagError>) -> Void)? = nil,
        reading read: @escaping @Sendable (String) throws -> [UInt8]
    ) throws {
        let document = try ServerDocument(json: try Data(contentsOf: URL(fileURLWithPath: path)))
        try self.init(
            source: .file(path: path), document: document, configuration: configuration, onRequest: onRequest,
            onReload: onReload, read: read)
    }

    private init(
        source: Source, document: ServerDocument, configuration: Configuration,
        onRequest: (@Sendable (RequestRecord) -> Void)?,
        onReload: (@Sendable (Result<ServerDocument, FlagError>) -> Void)? = nil,
        read: @escaping @Sendable (String) throws -> [UInt8] = { try FileIO.read($0) }, sharing: Bool = false
    ) throws {
        self.source = source
        self.configuration = configuration
        self.onRequest = onRequest
        self.onReload = onReload
        self.readFile = read
        self.state = Locked(State(document: document, log: RequestLog(capacity: configuration.maxLoggedRequests)))
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw Socket.Failure(operation: "pipe", code: errno) }
        stopPipe = (fds[0], fds[1])
        do {
            (listenFD, port) = try Socket.listen(host: configuration.host, port: configuration.port, sharing: sharing)
        } catch {
            close(fds[0])
            close(fds[1])
            throw error
        }
        if case .file(let path) = source {
            state.withLock { $0.fileStamp = FileStamp(path: path) }
            spawn { [self] in watchFile() }
        }
        spawn { [self] in acceptLoop() }
    }

    deinit { stop() }

    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL {
        URL(string: "http://\(configuration.host):\(port)") ?? URL(fileURLWithPath: "/")
    }

    /// The URL of `POST /flags`.
    public var flagsURL: URL { baseURL.appendingPathComponent("flags") }

    // MARK: Control

    /// The fault applied to flag requests from now on (nil: behave).
    public var fault: Fault? {
        get { state.withLock { $0.fault } }
        set { state.withLock { $0.fault = newValue } }
    }

    /// Extra delay before every answer.
    public var latency: Duration {
        get { state.withLock { $0.latency } }
        set { state.withLock { $0.latency = newValue } }
    }

    /// The share of flag requests (0…1) answered 503 at random, when no fault is set.
    public var failRate: Double {
        get { state.withLock { $0.failRate } }
        set { state.withLock { $0.failRate = min(max(newValue, 0), 1) } }
    }

    /// The served content's revision: bumped by every change of the document, the flagd
    /// document or the signing key. A change stream's event names the revision it announces
    /// (`id: 7`, ETag `"r7"`), so a client that has heard the current one has heard them all.
    public var revision: Int { state.withLock { $0.revision } }

    /// The document served now.
    public var document: ServerDocument {
        get { state.withLock { $0.document } }
        set {
            let revision = state.withLock { s in
                s.document = newValue
                return s.revision
            }
            changes.announce(revision)
        }
    }

    /// The flagd flag-definition document served at `GET /flagd/flags.json` (with ETag and
    /// 304), for clients that evaluate on the device (`FlagEndpoint.flagd(url:headers:bucketing:)`, in `FeatureFlagsFlagd`); nil
    /// answers 404. Setting it announces a change on every change stream. When the server
    /// advertises streams and the document names none, its own `/events` is added as a
    /// top-level `eventStreams` member (flagd's schema allows extra top-level members). The
    /// bytes must parse as flagd definitions.
    /// - Returns: the problems of flags that break the format (each is served as a
    ///   `PARSE_ERROR` flag, the others as written); empty when `document` is nil.
    /// - Throws: `FlagError` with `PARSE_ERROR` when the bytes are not a flagd
    ///   definitions document at all (nothing changes then).
    @discardableResult
    public func serveFlagd(_ document: [UInt8]?) throws(FlagError) -> [FlagViolation] {
        do {
            return try serveFlagdDefinitions(document)?.problems ?? []
        } catch {
            throw FlagError(.parseError, "not a flagd definitions document: \(error.problems.first?.description ?? "unreadable")")
        }
    }

    /// ``serveFlagd(_:)`` for the tools: the compiled definitions, or the document's problems.
    @discardableResult
    package func serveFlagdDefinitions(_ document: [UInt8]?) throws(FlagdDocumentError) -> FlagdDefinitions? {
        var served: (body: [UInt8], etag: String)?
        var definitions: FlagdDefinitions?
        if let document {
            definitions = try FlagdDefinitions.parse(document)
            var body = document
            if configuration.advertiseStreams, configuration.maxStreams > 0, case .object(var top)? = try? FlagJSON.parse(document),
                top["eventStreams"] == nil
            {
                top["eventStreams"] = WireFormat.ownEventStream
                body = FlagJSON.bytes(.object(top))
            }
            served = (body, Responder.etag(body))
        }
        let revision = state.withLock { s in
            s.flagd = served
            return s.revision
        }
        changes.announce(revision)
        return definitions
    }

    /// Signs every flag answer from now on — each wire format, and the flagd document — as a
    /// compact JWS (RFC 7515, Ed25519) with the Ed25519 private key in `privateKeyPEM` (a
    /// `PRIVATE KEY` block as `openssl genpkey -algorithm ed25519` writes it), naming `keyID`
    /// and the time it was signed (`iat`: `issuedAt`, else the time each answer is rendered) and
    /// `expiresAt` (`exp`) in the protected header. nil: answers are unsigned.
    /// Clients configured with the matching public key (`FlagFetcher.Configuration.trustedKeys`)
    /// accept only such answers. LaunchDarkly's stream events are not signed.
    /// - Throws: `FlagError` (`GENERAL`) when the text holds no Ed25519 private key.
    public func signAnswers(
        privateKeyPEM: String?, keyID: String? = nil, issuedAt: Date? = nil, expiresAt: Date? = nil
    ) throws(FlagError) {
        guard let privateKeyPEM else {
            state.withLock { $0.signer = nil }
            return
        }
        guard let seed = SigningKeys.privateKey(privateKeyPEM) else {
            throw FlagError(.general, "not an Ed25519 private key (a PRIVATE KEY PEM block)")
        }
        let publicKey = Ed25519.publicKey(seed: seed)  // once, not at every signature
        let revision = state.withLock { s in
            s.signer = (seed, publicKey, keyID, issuedAt, expiresAt)
            return s.revision
        }
        changes.announce(revision)
    }

    /// The flagd document served now, as sent (nil: none).
    public var flagdDocument: [UInt8]? { state.withLock { $0.flagd?.body } }

    /// The fault applied to change streams from now on (nil: behave).
    public var streamFault: StreamFault? {
        get { state.withLock { $0.streamFault } }
        set {
            state.withLock { $0.streamFault = newValue }
            changes.wake()
        }
    }

    /// How many change streams are open now.
    public var streamCount: Int { state.withLock { $0.connections.streams } }

    /// How often the streams' loops woke up, all streams together (for tests: a stream waits
    /// for a change, a fault, the heartbeat or a second, and never spins).
    package var streamWakeups: Int { state.withLock { $0.streamWakeups } }

    /// Connections accepted since the server started, and the most accepted within one
    /// second (whole seconds of its running time): how hard a reconnection storm hits it.
    public var connectionRate: (total: Int, peakPerSecond: Int) { state.withLock { ($0.accepts.total, $0.accepts.peak) } }

    /// How often the file was reloaded after a change.
    public var reloadCount: Int { state.withLock { $0.reloads } }

    /// Why the last reload failed, if it did (the previous document is still served).
    public var lastReloadError: String? { state.withLock { $0.lastReloadError } }

    /// The last ``Configuration/maxLoggedRequests`` requests, in arrival order.
    public var requests: [RequestRecord] { state.withLock { $0.log.records } }

    /// How many requests arrived so far (all of them, not only those still in the log).
    public var requestCount: Int { state.withLock { $0.log.total } }

    /// How many connections are open now.
    public var connectionCount: Int { state.withLock { $0.connections.count } }

    /// How many connections are stalled now: waiting for a request or for their client to read.
    var stalledConnectionCount: Int { state.withLock { $0.connections.stalledCount } }

    /// How many connections were closed to make room for new ones (see ``Configuration/maxConnections``).
    public var evictionCount: Int { state.withLock { $0.connections.evictions } }

    /// Forgets the request log.
    public func clearLog() { state.withLock { $0.log.clear() } }

    /// Stops like ``stop()`` and keeps its port reserved (bound, not listening: connections
    /// are refused) from the moment it stops listening, so that nothing else is given the port
    /// before a server comes back on it: a rehearsal of a server that goes down and returns.
    /// The reservation binds the port before the listener closes: the port is never free in
    /// between. Nil if the server had already stopped or the port could not be held.
    package func stopHoldingPort() -> PortReservation? {
        stop(holdingPort: true)
    }

    /// Stops listening, ends every connection (hanging ones included) and waits for the
    /// server's threads to finish. Idempotent.
    public func stop() {
        _ = stop(holdingPort: false)
    }

    private func stop(holdingPort: Bool) -> PortReservation? {
        let first: Bool = state.withLock { s in
            if s.stopping { return false }
            s.stopping = true
            for fd in s.connections.descriptors { shutdown(fd, Int32(SHUT_RDWR)) }
            return true
        }
        guard first else { return nil }
        changes.stop()
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
        _ = threads.wait(timeout: .now() + 5)
        // Held before the listener closes (both sockets allow sharing the port for that
        // moment), so that the port is never free between the two.
        var hold: PortReservation?
        if holdingPort {
            Socket.allowSharing(listenFD)
            hold = PortReservation(port: port, sharing: true)
        }
        close(listenFD)
        close(stopPipe.read)
        close(stopPipe.write)
        return hold
    }

    // MARK: Threads

    private func spawn(_ body: @escaping @Sendable () -> Void) {
        threads.enter()
        let thread = Thread { [threads] in
            body()
            threads.leave()
        }
        thread.name = "FlagServer"
        thread.start()
    }

    private func acceptLoop() {
        while true {
            guard Socket.waitReadable(listenFD, stopFD: stopPipe.read, milliseconds: -1) == .ready else { return }
            let fd = accept(listenFD, nil, nil)
            if fd < 0 { continue }
            #if canImport(Darwin)
            var yes: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &yes, socklen_t(MemoryLayout<Int32>.size))
            #endif
            let admitted = state.withLock { s -> Bool in
                guard !s.stopping else { return false }
                s.accepts.count(at: .now)
                return s.connections.admit(fd, limit: configuration.maxConnections, at: .now, stalledFor: configuration.evictionGrace)
            }
            guard admitted else {
                respondAndClose(fd, status: 503, message: "too many connections")
                continue
            }
            spawn { [self] in
                serve(fd)
                Socket.finish(fd, stopFD: stopPipe.read)
                // Remove and close under the lock: `stop()` and eviction shut down descriptors in
                // the table under the same lock, so they can never hit a number already reused.
                state.withLock { s in
                    s.connections.remove(fd)
                    close(fd)
                }
            }
        }
    }

    /// Answers a connection that was not admitted, without waiting for it to read, and closes it.
    private func respondAndClose(_ fd: Int32, status: Int, message: String) {
        // Whatever the client already sent is read first: closing with unread bytes resets
        // the connection, and the reset can destroy the answer before the client reads it.
        Socket.discardPending(fd)
        Socket.send(fd, errorAnswer(status: status, message: message)[...], stopFD: stopPipe.read, timeoutMilliseconds: 0)
        shutdown(fd, Int32(SHUT_WR))
        Socket.discardPending(fd)
        close(fd)
    }

    private func errorAnswer(status: Int, message: String) -> [UInt8] {
        let body = FlagJSON.bytes(.object(["error": .string(message)]))
        return HTTPResponse.head(
            status: status,
            headers: [("Content-Type", "application/json"), ("Content-Length", "\(body.count)"), ("Connection", "close")])
            + body
    }

    private func serve(_ fd: Int32) {
        let connection = Connection(
            fd: fd, stopFD: stopPipe.read, sendTimeoutMilliseconds: max(configuration.sendTimeout.pollMilliseconds, 1)
        ) { [state] blocked in
            state.withLock { s in
                if blocked { s.connections.stalled(fd, at: .now) } else { s.connections.working(fd) }
            }
        }
        var reader = HTTPReader(
            fd: fd, stopFD: stopPipe.read, maxHeaderBytes: configuration.maxHeaderBytes,
            maxBodyBytes: configuration.maxBodyBytes, idleMilliseconds: max(configuration.idleTimeout.pollMilliseconds, 100),
            requestMilliseconds: max(configuration.requestTimeout.pollMilliseconds, 100))
        var served = 0
        while true {
            switch reader.next() {
            case .closed:
                return
            case .reject(let status, let reason):
                connection.send(errorAnswer(status: status, message: reason))
                return
            case .request(let request):
                served += 1
                if served > 1, state.withLock({ $0.fault }) == .resetReusedConnections {
                    Socket.resetOnClose(fd)
                    return
                }
                state.withLock { $0.connections.working(fd) }
                let keepOpen = handle(request, on: connection)
                if !keepOpen || !request.keepAlive { return }
                // Waiting for the next request: stalled from now.
                state.withLock { $0.connections.stalled(fd, at: .now) }
            }
        }
    }

    // MARK: Requests

    /// Answers one request; false when the connection must close.
    private func handle(_ request: HTTPRequest, on connection: Connection) -> Bool {
        let started = ContinuousClock.now
        reloadIfChanged()
        // HEAD is GET without the content (RFC 9110 §9.3.2); rehearsed faults, which shape the
        // content, do not apply to it.
        let headOnly = request.method == "HEAD"
        var routed = request
        if headOnly { routed.method = "GET" }
        let route = Route(routed, pathAttribute: configuration.pathAttribute)
        let (flagd, signer) = state.withLock { ($0.flagd, $0.signer) }
        let (index, fault, latency, document, revision) = state.withLock { s in
            var fault = route.context == nil || headOnly ? nil : s.fault
            if route.context != nil, !headOnly, fault == nil, s.failRate > 0, Double.random(in: 0..<1) < s.failRate {
                fault = .status(503, retryAfter: nil)
            }
            let index = s.log.append { index in
                var record = RequestRecord(
                    index: index, method: request.method, path: request.path,
                    route: Route.label(request, format: route.format, pathAttribute: configuration.pathAttribute),
                    headers: request.headers,
                    contextFingerprint: route.context?.fingerprint, fault: fault, status: nil, bytesSent: 0, duration: nil,
                    requestBytes: request.wireBytes, responseHeadBytes: 0)
                record.receivedAt = started
                record.flagConfigEtag = request.query[RefetchHint.etagParameter]
                record.flagConfigLastModified = request.query[RefetchHint.lastModifiedParameter]
                return record
            }
            return (index, fault, s.latency, s.document, s.revision)
        }
        var responder = Responder(connection: connection, closing: !request.keepAlive) { [state] status, bodyBytes, headBytes in
            let elapsed = ContinuousClock.now - started
            state.withLock { s in
                _ = s.log.update(index) { record in
                    record.status = status
                    record.bytesSent = bodyBytes
                    record.responseHeadBytes = headBytes
                    record.duration = elapsed
                }
            }
        }
        if latency > .zero, !Socket.pause(milliseconds: Int(latency.milliseconds), connection: connection.fd, stopFD: stopPipe.read) {
            finish(index, status: nil, bytes: 0, started: started)
            return false
        }
        responder.headOnly = headOnly
        responder.confirmsKeepAlive = request.http10KeepAlive
        let outcome: Responder.Outcome
        if route.needsCredentials, let (status, message) = authorize(request) {
            outcome = responder.error(status: status, message: message, format: route.format)
        } else if let fault, fault != .resetReusedConnections, let context = route.context {
            // A rehearsed fault, for the routes that evaluate flags. (`resetReusedConnections`
            // answers first requests normally; `serve` resets the rest.)
            outcome = responder.apply(fault, document: document.evaluate(for: context))
        } else {
            switch route {
            case .events where headOnly, .launchDarklyStream where headOnly:
                // A stream's head, then the end: the events are the content. When a GET would
                // be refused (the stream limit reached), so is the HEAD, with the same status.
                if state.withLock({ $0.connections.admitsStream(limit: configuration.maxStreams) }) {
                    _ = responder.streamHead()
                    outcome = Responder.Outcome(status: 200, bytes: 0, keepOpen: false)
                } else {
                    outcome = responder.json(status: 503, Self.streamsFull(configuration.maxStreams))
                }
            case .events:
                outcome = streamChanges(request, responder: responder, connection: connection)
            case .launchDarklyStream(let context, let reasons):
                outcome = streamLaunchDarkly(request, context: context, reasons: reasons, responder: responder, connection: connection)
            case .flagd:
                if let flagd {
                    // Signed with the times given (none by default): the same bytes and tag for every request.
                    let body =
                        signer.map {
                            JWS.sign(flagd.body, seed: $0.seed, publicKey: $0.publicKey, keyID: $0.keyID, issuedAt: $0.issuedAt, expiresAt: $0.expiresAt)
                        } ?? flagd.body
                    let etag = signer == nil ? flagd.etag : Responder.etag(body)
                    outcome = responder.document(body: body, etag: etag, ifNoneMatch: request.headers["if-none-match"])
                } else {
                    outcome = responder.error(status: 404, message: "no flagd document is served", format: .json)
                }
            case .failure(let status, let message, let format):
                outcome = responder.error(status: status, message: message, format: format)
            case .refusal(let status, let body, _):
                outcome = responder.json(status: status, body)
            case .serverOptions:
                outcome = responder.empty(status: 200, extra: [("Allow", Route.serverMethods)])
            case .methodNotAllowed(let allow, let format):
                outcome = responder.error(status: 405, message: "use \(allow)", format: format, extra: [("Allow", allow)])
            case .ofrepFlag(let key, let context):
                outcome = Self.evaluateOne(key, in: document.evaluate(for: context), responder: responder)
            case .flags(let context, let format):
                let (body, etag) = render(document, revision: revision, for: context, as: format)
                outcome = responder.document(body: body, etag: etag, ifNoneMatch: request.headers["if-none-match"])
            }
        }
        finish(index, status: outcome.status, bytes: outcome.bytes, started: started)
        return outcome.keepOpen
    }

    /// OFREP's single-flag answer: 200 with the flag, 400 with its error code when its
    /// evaluation failed, 404 `FLAG_NOT_FOUND` when the document has no such flag.
    private static func evaluateOne(_ key: String, in evaluated: FlagDocument, responder: Responder) -> Responder.Outcome {
        guard let entry = evaluated.flags[key] else {
            return responder.json(
                status: 404, ["key": .string(key), "errorCode": "FLAG_NOT_FOUND", "errorDetails": .string("no flag named \(key)")])
        }
        let item = WireFormat.ofrepItem(key: key, entry: entry)
        return responder.json(status: entry.errorCode == nil ? 200 : 400, item)
    }

    /// 401 when a required header is missing, 403 when it has another value; nil when allowed.
    private func authorize(_ request: HTTPRequest) -> (Int, String)? {
        for (name, expected) in configuration.requiredHeaders {
            guard let sent = request.headers[name.lowercased()] else { return (401, "missing credentials (\(name))") }
            if sent != expected { return (403, "credentials refused (\(name))") }
        }
        return nil
    }

    /// The answer for `context`: from the cache when the document has not changed since.
    private func render(_ document: ServerDocument, revision: Int, for context: EvaluationContext, as format: WireFormat) -> ([UInt8], String) {
        let key = RenderKey(fingerprint: context.fingerprint, format: format)
        if let cached = state.withLock({ $0.rendered[key] }), cached.revision == revision { return (cached.body, cached.etag) }
        return renderGate.withLock { _ in
            if let cached = state.withLock({ $0.rendered[key] }), cached.revision == revision { return (cached.body, cached.etag) }
            let advertise = configuration.advertiseStreams && configuration.maxStreams > 0
            let evaluated = document.evaluate(for: context)
            var body: [UInt8]
            if case .launchDarkly(let reasons) = format {
                // The revision is every flag's environment version, as in the stream's events.
                body = FlagJSON.bytes(.object(WireFormat.launchDarklyFlags(evaluated, reasons: reasons, version: revision)), sortedKeys: true)
            } else {
                body = format.render(evaluated, eventStreams: advertise ? WireFormat.ownEventStream : nil)
            }
            if let signer = state.withLock({ $0.signer }) {
                body = JWS.sign(
                    body, seed: signer.seed, publicKey: signer.publicKey, keyID: signer.keyID, issuedAt: signer.issuedAt ?? Date(),
                    expiresAt: signer.expiresAt)
            }
            let etag = Responder.etag(body)
            state.withLock { s in
                guard s.revision == revision else { return }
                if s.rendered.count >= 256 || s.renderedBytes + body.count > 64 << 20 { s.rendered.removeAll() }
                s.rendered[key] = (revision, body, etag)
                s.renderedBytes += body.count
            }
            return (body, etag)
        }
    }

    /// Records how the request ended (bytes actually sent, total time) and reports it.
    func finish(_ index: Int, status: Int?, bytes: Int, started: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - started
        let record: RequestRecord? = state.withLock { s in
            s.log.update(index) { record in
                record.status = status
                record.bytesSent = bytes
                if record.duration == nil || status == nil { record.duration = elapsed }
            }
        }
        if let record, let onRequest { onRequest(record) }
    }

    // MARK: Hot reload

    private func reloadIfChanged() {
        guard case .file(let path) = source else { return }
        // One reload at a time, start to end: a request that comes while the watcher reads a
        // changed file waits for the new document instead of being served the old one.
        // `onReload` runs after, outside: it may be anyone's code.
        if let result = reloading.withLock({ _ in reloadNow(path) }) { onReload?(result) }
    }

    /// Reads the file if its stamp changed, and serves it if it parses: what the reload came to,
    /// or nil when the file had not changed.
    private func reloadNow(_ path: String) -> Result<ServerDocument, FlagError>? {
        let stamp = FileStamp(path: path)
        let changed = state.withLock { s -> Bool in
            guard stamp != s.fileStamp else { return false }
            s.fileStamp = stamp
            return true
        }
        guard changed else { return nil }
        let result: Result<ServerDocument, FlagError>
        do {
            result = .success(try ServerDocument(json: try readFile(path)))
        } catch let error as FlagError {
            result = .failure(error)
        } catch {
            result = .failure(FlagError(.general, "cannot read \(path): \(error)"))
        }
        let revision: Int? = state.withLock { s in
            switch result {
            case .success(let document):
                s.document = document
                s.reloads += 1
                s.lastReloadError = nil
                return s.revision
            case .failure(let error):
                s.lastReloadError = error.description
                return nil
            }
        }
        if let revision { changes.announce(revision) }
        return result
    }

    /// Re-checks the served file every 200 ms, so edits apply even before the next request.
    private func watchFile() {
        var fds = [pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0)]
        while poll(&fds, 1, 200) == 0 || (fds[0].revents == 0 && errno == EINTR) {
            reloadIfChanged()
        }
    }
}

/// A rendered answer's identity: the context and the wire format.
struct RenderKey: Hashable {
    let fingerprint: String
    let format: WireFormat
}
