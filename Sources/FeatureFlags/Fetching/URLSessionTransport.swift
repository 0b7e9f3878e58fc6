import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// ``FlagTransport`` over `URLSession`, with a delegate so the size limit applies to the bytes
/// as they arrive. No cache (`urlCache = nil`), no cookies, one connection per request
/// (`Connection: close`).
///
/// Every call into `URLSession` (creating, resuming, cancelling a task) happens on the
/// package's one serial queue for them (``SessionCalls``), never on the caller's thread: on
/// Linux those calls can block for up to a second inside libcurl, which must not stall Swift's
/// small cooperative thread pool, nor hold a dispatch thread per transport. A cancelled caller
/// is answered at once; the task is cancelled behind it.
/// After ``shutdown()`` every send fails at once — creating a task on an invalidated
/// session would crash on Linux.
///
/// The session is created on `control` for the first request, not with the transport: an app
/// builds its provider at launch, before the first flag read, and a session's configuration
/// costs more than the rest of that start together (on Linux it also reads the environment and
/// resolves a cache directory).
final class URLSessionTransport: FlagTransport, SessionEventHandler, @unchecked Sendable {
    // @unchecked: mutable state lives in `Locked` boxes; `URLSession` is thread-safe and is
    // only called on `control`; delegate callbacks (through `WeakSessionDelegate`) touch only
    // `Locked` state.

    /// One request's life: the waiter, what has arrived, and the task once created.
    private final class Exchange: Sendable {
        struct State {
            var continuation: CheckedContinuation<FlagResponse, any Error>?
            var task: URLSessionDataTask?
            var cancelled = false
            var status = 0
            var headers: [String: String] = [:]
            var body: [UInt8] = []
        }
        let maxBytes: Int
        let state: Locked<State>

        init(maxBytes: Int) {
            self.maxBytes = maxBytes
            state = Locked(State())
        }

        /// Resumes the waiter once; later calls do nothing.
        func finish(_ result: Result<FlagResponse, any Error>) {
            let continuation = state.withLock { s in
                defer { s.continuation = nil }
                return s.continuation
            }
            continuation?.resume(with: result)
        }
    }

    /// The session's life: not yet needed, open, or shut down.
    private enum SessionState {
        case notCreated
        case open(URLSession)
        case closed
    }

    /// The session, the requests in flight by task, and how many tasks have not ended. One
    /// lock over one struct: a transport is built at every app's launch, and each generic type
    /// with a hashable key costs the runtime a conformance lookup the first time.
    private struct Shared {
        var session = SessionState.notCreated
        var exchanges: [Int: Exchange] = [:]
        /// Tasks resumed whose completion the session has not reported yet.
        var running = 0
    }

    private let shared = Locked(Shared())
    /// Where every `URLSession` call is made: the process's one queue for them (``SessionCalls``).
    private let control = SessionCalls.queue
    private let allowInsecureRedirects: Bool

    /// A transport with its own session. `allowInsecureRedirects` lets redirects go to plain
    /// HTTP on other hosts (off: a redirect to `http://` off loopback is refused).
    init(allowInsecureRedirects: Bool = false) {
        self.allowInsecureRedirects = allowInsecureRedirects
    }

    /// On `control`: the session, created now if this is the first request; nil after shutdown.
    private func openSession() -> URLSession? {
        switch shared.withLock({ $0.session }) {
        case .open(let existing): return existing
        case .closed: return nil
        case .notCreated: break
        }
        let configuration = URLSessionConfiguration.flagService()
        configuration.httpMaximumConnectionsPerHost = 4
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "FeatureFlags.URLSessionTransport.delegate"
        // The session keeps its delegate alive until it is invalidated: a proxy that holds this
        // transport weakly lets a transport nobody shut down go away (its deinit invalidates).
        let created = URLSession(configuration: configuration, delegate: WeakSessionDelegate(self), delegateQueue: queue)
        let kept = shared.withLock { state -> Bool in
            guard case .notCreated = state.session else { return false }
            state.session = .open(created)
            return true
        }
        if kept { return created }
        // Shut down while it was being created.
        created.invalidateAndCancel()
        return nil
    }

    /// Sends `request`; see ``FlagTransport``.
    func send(_ request: FlagRequest, maxBytes: Int, timeout: TimeInterval) async throws(FetchError) -> FlagResponse {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        urlRequest.httpBody = request.body.map { Data($0) }
        urlRequest.cachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        // Bounded: URLSession on Linux traps on a timeout beyond about 10¹⁵ seconds.
        urlRequest.timeoutInterval = min(max(1, timeout.rounded(.up)), Duration.longestWait.seconds)
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        // One connection per fetch. Polls are minutes apart, so a kept-alive connection is
        // mostly gone (closed by the server or a middlebox) by the next one — and when the peer
        // resets a reused connection, libcurl resends a POST without its body and never
        // completes: the fetch would hang until the budget and be reported as a timeout.
        if urlRequest.value(forHTTPHeaderField: "Connection") == nil {
            urlRequest.setValue("close", forHTTPHeaderField: "Connection")
        }
        let prepared = urlRequest
        let exchange = Exchange(maxBytes: maxBytes)
        do {
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<FlagResponse, any Error>) in
                    let cancelledAlready = exchange.state.withLock { s in
                        s.continuation = continuation
                        return s.cancelled
                    }
                    if cancelledAlready {
                        exchange.finish(.failure(FetchError.cancelled))
                        return
                    }
                    control.async { [self] in start(prepared, exchange) }
                }
            } onCancel: {
                let task = exchange.state.withLock { s in
                    s.cancelled = true
                    return s.task
                }
                exchange.finish(.failure(FetchError.cancelled))
                if let task { control.async { task.cancel() } }
            }
        } catch let error as FetchError {
            throw error
        } catch {
            throw .transport(String(describing: type(of: error)))
        }
    }

    /// On `control`: creates and resumes the task, unless cancelled or shut down meanwhile.
    private func start(_ urlRequest: URLRequest, _ exchange: Exchange) {
        guard let session = openSession() else {
            exchange.finish(.failure(FetchError.cancelled))
            return
        }
        let task = session.dataTask(with: urlRequest)
        let cancelled = exchange.state.withLock { s in
            s.task = task
            return s.cancelled
        }
        if cancelled {
            task.cancel()
            return
        }
        shared.withLock { state in
            state.exchanges[task.taskIdentifier] = exchange
            state.running += 1
        }
        task.resume()
    }

    private func exchange(for task: URLSessionTask) -> Exchange? {
        shared.withLock { $0.exchanges[task.taskIdentifier] }
    }

    /// Ends one task's exchange with `result` and cancels the task on `control`.
    private func abort(_ task: URLSessionTask, with error: FetchError) {
        shared.withLock { $0.exchanges.removeValue(forKey: task.taskIdentifier) }?.finish(.failure(error))
        control.async { task.cancel() }
    }

    /// Cancels every request in flight and invalidates the session. Idempotent.
    func shutdown() {
        let (closing, waiting) = shared.withLock { state -> (URLSession?, [Exchange]) in
            defer {
                state.session = .closed
                state.exchanges.removeAll()
            }
            if case .open(let open) = state.session { return (open, Array(state.exchanges.values)) }
            return (nil, Array(state.exchanges.values))
        }
        for exchange in waiting { exchange.finish(.failure(FetchError.cancelled)) }
        if let closing { control.async { closing.invalidateAndCancel() } }
    }

    deinit { shutdown() }

    // MARK: Session events (from `WeakSessionDelegate`)

    /// Records the status and headers; refuses a declared length above the limit.
    func session(
        received response: URLResponse, for dataTask: URLSessionDataTask,
        decide completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        guard let exchange = exchange(for: dataTask), let http = response as? HTTPURLResponse else {
            return completionHandler(.allow)
        }
        exchange.state.withLock { s in
            s.status = http.statusCode
            for (name, value) in http.allHeaderFields {
                if let name = name as? String, let value = value as? String { s.headers[name.lowercased()] = value }
            }
        }
        if response.expectedContentLength > Int64(exchange.maxBytes) {
            abort(dataTask, with: .payloadTooLarge(limit: exchange.maxBytes))
            return completionHandler(.cancel)
        }
        completionHandler(.allow)
    }

    /// Appends body bytes; cancels once they exceed the limit.
    func session(received data: Data, for dataTask: URLSessionDataTask) {
        guard let exchange = exchange(for: dataTask) else { return }
        let fits = exchange.state.withLock { s -> Bool in
            guard s.body.count + data.count <= exchange.maxBytes else { return false }
            s.body.append(contentsOf: data)
            return true
        }
        if !fits { abort(dataTask, with: .payloadTooLarge(limit: exchange.maxBytes)) }
    }

    /// Tasks whose transfer has not ended yet. A caller is answered as soon as its answer is
    /// refused (too large) or cancelled; on Linux, libcurl may go on reading the transfer for a
    /// while after it was cancelled (the bytes are dropped as they arrive). Tests and
    /// benchmarks wait for this to reach zero before measuring what the process keeps.
    var transfersInFlight: Int { shared.withLock { $0.running } }

    /// Completes the waiter with the response or the mapped error.
    func session(completed task: URLSessionTask, error: (any Error)?) {
        let exchange = shared.withLock { state -> Exchange? in
            state.running = max(0, state.running - 1)
            return state.exchanges.removeValue(forKey: task.taskIdentifier)
        }
        guard let exchange else { return }
        if let error {
            exchange.finish(.failure(Self.map(error)))
        } else {
            let response = exchange.state.withLock { FlagResponse(status: $0.status, headers: $0.headers, body: $0.body) }
            exchange.finish(.success(response))
        }
    }

    /// Follows redirects only where the HTTPS rule allows, and to another origin without the
    /// request's credentials.
    func session(redirecting task: URLSessionTask, to request: URLRequest, decide completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        if let refusal = refusal(ofRedirectTo: request, allowInsecureHTTP: allowInsecureRedirects) {
            shared.withLock { $0.exchanges.removeValue(forKey: task.taskIdentifier) }?.finish(.failure(refusal))
            return completionHandler(nil)
        }
        completionHandler(credentialsLeftBehind(in: request, redirecting: task))
    }

    static func map(_ error: any Error) -> FetchError {
        if let fetch = error as? FetchError { return fetch }
        let nsError = error as NSError
        guard nsError.domain == NSURLErrorDomain else { return .transport(nsError.localizedDescription) }
        switch nsError.code {
        case NSURLErrorCancelled: return .cancelled
        case NSURLErrorTimedOut: return .offline("the connection timed out")
        case NSURLErrorCannotConnectToHost: return .offline("cannot connect to the host")
        case NSURLErrorCannotFindHost, NSURLErrorDNSLookupFailed: return .offline("cannot resolve the host")
        case NSURLErrorNotConnectedToInternet: return .offline("not connected to the internet")
        case NSURLErrorNetworkConnectionLost: return .offline("the connection was lost")
        case NSURLErrorDataNotAllowed, NSURLErrorInternationalRoamingOff: return .offline("data not allowed")
        case NSURLErrorBadServerResponse, NSURLErrorZeroByteResource: return .transport("bad server response")
        case NSURLErrorSecureConnectionFailed, NSURLErrorServerCertificateUntrusted, NSURLErrorServerCertificateHasBadDate,
            NSURLErrorServerCertificateNotYetValid, NSURLErrorServerCertificateHasUnknownRoot:
            return .transport("TLS failure")
        default:
            // The description is libcurl's or the system's message (host and port at most);
            // never the URL, whose query may carry an API key.
            let message = nsError.localizedDescription.split(separator: "?").first.map(String.init) ?? ""
            if message.localizedCaseInsensitiveContains("out of memory") {
                // libcurl's word for an answer whose header section passed its limit.
                return .transport("the answer could not be read: its header section is too large (URL error \(nsError.code))")
            }
            return .transport("URL error \(nsError.code): \(message)")
        }
    }
}

extension URLSessionConfiguration {
    /// What every session talking to a flag service uses: ephemeral, no cache, no cookies —
    /// flags are never answered from a cache, and nothing is kept between sessions.
    static func flagService() -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        return configuration
    }
}
