import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// ``FlagTransport`` over `URLSession`: size limit as bytes arrive, no cache or cookies, lazy session, calls on ``SessionCalls``.
final class URLSessionTransport: FlagTransport, SessionEventHandler, @unchecked Sendable {
    // @unchecked: mutable state is in `Locked` boxes; `URLSession` is only called on `control`.

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

    /// The session, the requests in flight by task id, and how many tasks have not ended.
    private struct Shared {
        var session = SessionState.notCreated
        var exchanges: [Int: Exchange] = [:]
        /// Tasks resumed and not yet reported complete.
        var running = 0
        /// Tasks refused as too large whose transfer has not ended yet.
        var oversized: Set<Int> = []
        /// A refused transfer ended since the last request: free memory goes back before the next.
        var trimDue = false
    }

    private let shared = Locked(Shared())
    /// Where every `URLSession` call is made.
    private let control = SessionCalls.queue
    private let allowInsecureRedirects: Bool

    /// `allowInsecureRedirects` lets redirects go to plain HTTP off loopback.
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
        let created = URLSession.flagService(for: self, queue: "FeatureFlags.URLSessionTransport.delegate") {
            $0.httpMaximumConnectionsPerHost = 4
        }
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
        // What libcurl freed after a refused transfer had ended goes back too (see `session(completed:)`).
        let trimDue = shared.withLock { state -> Bool in
            defer { state.trimDue = false }
            return state.trimDue
        }
        if trimDue { returnFreeMemoryToTheSystem() }
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        urlRequest.httpBody = request.body.map { Data($0) }
        urlRequest.cachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        // Bounded: URLSession on Linux traps on a timeout beyond about 10¹⁵ seconds.
        urlRequest.timeoutInterval = min(max(1, timeout.rounded(.up)), Duration.longestWait.seconds)
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        // One connection per fetch: on a reset reused connection libcurl resends a POST without its body and hangs.
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
        shared.withLock { state -> Exchange? in
            if case .payloadTooLarge = error.kind { state.oversized.insert(task.taskIdentifier) }
            return state.exchanges.removeValue(forKey: task.taskIdentifier)
        }?.finish(.failure(error))
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

    /// Tasks whose transfer has not ended (on Linux libcurl may read on after a cancel).
    var transfersInFlight: Int { shared.withLock { $0.running } }

    /// Completes the waiter with the response or the mapped error.
    func session(completed task: URLSessionTask, error: (any Error)?) {
        let (exchange, oversized) = shared.withLock { state -> (Exchange?, Bool) in
            state.running = max(0, state.running - 1)
            let oversized = state.oversized.remove(task.taskIdentifier) != nil
            if oversized { state.trimDue = true }
            return (state.exchanges.removeValue(forKey: task.taskIdentifier), oversized)
        }
        // libcurl reads a refused transfer on after the cancel (tens of MB from a hostile service).
        if oversized { returnFreeMemoryToTheSystem() }
        guard let exchange else { return }
        if let error {
            exchange.finish(.failure(Self.map(error)))
        } else {
            let response = exchange.state.withLock { FlagResponse(status: $0.status, headers: $0.headers, body: $0.body) }
            exchange.finish(.success(response))
        }
    }

    /// Follows redirects only where the HTTPS rule allows; to another origin without credentials.
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
            // Never the URL's query: it may carry an API key.
            let message = nsError.localizedDescription.split(separator: "?").first.map(String.init) ?? ""
            if message.localizedCaseInsensitiveContains("out of memory") {
                // libcurl's word for an answer whose header section passed its limit.
                return .transport("the answer could not be read: its header section is too large (URL error \(nsError.code))")
            }
            return .transport("URL error \(nsError.code): \(message)")
        }
    }
}

extension URLSession {
    /// A flag-service session (ephemeral, no cache, no cookies; `adjust` sets the rest) whose delegate calls
    /// go to `handler`, one at a time, on a queue named `queue`. The delegate holds `handler` weakly: the
    /// session retains its delegate, so an owner nobody shut down can still deinit.
    static func flagService(
        for handler: some SessionEventHandler, queue name: String, adjust: (URLSessionConfiguration) -> Void
    ) -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        adjust(configuration)
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = name
        return URLSession(configuration: configuration, delegate: WeakSessionDelegate(handler), delegateQueue: queue)
    }
}
