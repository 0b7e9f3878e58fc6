import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An SSE change stream kept open: heartbeat deadline, full-jitter reconnection with `Last-Event-ID`,
/// `opened` on each connect; signals arrive in order on the stream's own queue. Deviation from WHATWG
/// `EventSource`: a non-stream answer (but 204) is retried, not fatal. The URL never appears in a signal.
final class ChangeStream: SessionEventHandler, Sendable {
    /// What the owner hears.
    indirect enum Signal: Sendable, Equatable {
        /// Connected (again): fetch now.
        case opened
        /// Flags changed: fetch, passing these as `flagConfigEtag` / `flagConfigLastModified`.
        case refetch(etag: String?, lastModified: String?)
        /// Ended; retry in `retryIn` (nil: stopped). `halfOpen`: silent connection closed, fetch now. `refused`: 204 or 4xx but 408/429.
        case closed(reason: String, retryIn: Duration?, halfOpen: Bool = false, refused: Bool = false)
        /// What the reader of a stream an endpoint opens made of an event.
        case event(StreamEvent)
    }

    struct Configuration: Sendable {
        /// No byte for this long means the connection is half-open: it is reopened.
        var heartbeatDeadline: Duration = .seconds(45)
        /// Reconnection delays (full jitter), added to the stream's `retry:` (at most an hour).
        var backoff = Backoff(initial: .seconds(1), maximum: .seconds(60))
        /// Header fields sent with each connection (credentials).
        var headers: [String: String] = [:]
        /// Plain HTTP off loopback (refused by default).
        var allowInsecureHTTP = false
        /// The clock the heartbeat deadline runs on.
        var clock: any ElapsedClock = ContinuousElapsedClock()
        /// The largest event (or line) accepted; a larger one drops the connection.
        var maxEventBytes = 64 << 10
        /// The reconnections' jitter.
        var random = JitterSource(SystemRandomNumberGenerator())
        /// How to connect and what the events mean (nil: `GET`, the flag document's refetch events).
        var connection: StreamConnection?
    }

    private struct State {
        var running = false
        var generation = 0
        var task: URLSessionDataTask?
        var failures = 0
        var parser: EventStreamParser
        /// The connection's reader, for an endpoint's own stream.
        var reader: (any StreamEventReader)?
        /// The reconnections' jitter.
        var random: JitterSource
        /// When the last byte came, on ``Configuration/clock``.
        var lastActivity: Duration = .zero
        var failure: String?
        /// The heartbeat deadline closed the connection.
        var halfOpen = false
        /// The service refused the stream's URL.
        var refused = false
        /// The heartbeat watchdog, or the wait before reconnecting.
        var timer: Task<Void, Never>?
        var session: URLSession?
    }

    let url: URL
    let configuration: Configuration
    private let onSignal: @Sendable (Signal) -> Void
    private let state: Locked<State>
    /// Where every `URLSession` call is made.
    private let control = SessionCalls.queue
    private let signals = DispatchQueue(label: "FeatureFlags.ChangeStream.signals")

    init(url: URL, configuration: Configuration = Configuration(), onSignal: @escaping @Sendable (Signal) -> Void) {
        self.url = url
        self.configuration = configuration
        self.onSignal = onSignal
        state = Locked(State(parser: EventStreamParser(maxEventBytes: configuration.maxEventBytes), random: configuration.random))
        // The heartbeat deadline is this stream's own; URLSession's idle timeout must not come first.
        let deadline = heartbeatDeadline
        let session = URLSession.flagService(for: self, queue: "FeatureFlags.ChangeStream.delegate") {
            $0.timeoutIntervalForRequest = max(deadline.seconds * 4, 60)
            $0.timeoutIntervalForResource = 7 * 86_400
        }
        state.withLock { $0.session = session }
    }

    deinit { stop() }

    /// Opens the stream (and keeps it open) until ``stop()``. Does nothing while running.
    func start() {
        let generation: Int? = state.withLock { s in
            guard !s.running else { return nil }
            s.running = true
            s.generation += 1
            s.failures = 0
            return s.generation
        }
        guard let generation else { return }
        var refusal: String?
        do {
            try URLPolicy.check(url, allowInsecureHTTP: configuration.allowInsecureHTTP)
            // A field URLSession would drop (Linux) or refuse: the stream would connect without it.
            refusal = HeaderFieldCheck.problem(in: configuration.headers.merging(configuration.connection?.headers ?? [:]) { $1 })
        } catch {
            refusal = error.description
        }
        if let refusal {
            state.withLock { $0.running = false }
            signal(.closed(reason: refusal, retryIn: nil, halfOpen: false))
            return
        }
        control.async { [self] in connect(generation) }
    }

    /// Closes the stream; no reconnection, no more signals. The stream can be started again.
    func stop() {
        let (task, timer) = state.withLock { s -> (URLSessionDataTask?, Task<Void, Never>?) in
            s.running = false
            s.generation += 1
            defer {
                s.task = nil
                s.timer = nil
            }
            return (s.task, s.timer)
        }
        timer?.cancel()
        if let task { control.async { task.cancel() } }
    }

    /// Stops for good and releases the session.
    func shutdown() {
        stop()
        let session = state.withLock { s -> URLSession? in
            defer { s.session = nil }
            return s.session
        }
        if let session { control.async { session.invalidateAndCancel() } }
    }

    /// The heartbeat deadline, bounded (URLSession on Linux traps on huge timeouts).
    private var heartbeatDeadline: Duration {
        (configuration.connection?.heartbeatDeadline ?? configuration.heartbeatDeadline).boundedWait
    }

    /// Whether the stream is meant to be open (connected, connecting or waiting to reconnect).
    var isRunning: Bool { state.withLock { $0.running } }

    /// When the last byte came, on ``Configuration/clock``.
    var lastActivity: Duration { state.withLock { $0.lastActivity } }

    /// Returns once everything queued so far on the session and signal queues has run.
    func settle() {
        control.sync {}
        signals.sync {}
    }

    // MARK: Connecting (on `control`)

    private func connect(_ generation: Int) {
        var request = URLRequest(url: url)
        request.httpMethod = configuration.connection?.method ?? "GET"
        request.cachePolicy = .reloadIgnoringLocalAndRemoteCacheData
        request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
        request.setValue("no-cache", forHTTPHeaderField: "Cache-Control")
        for (name, value) in configuration.headers { request.setValue(value, forHTTPHeaderField: name) }
        if let connection = configuration.connection {
            for (name, value) in connection.headers { request.setValue(value, forHTTPHeaderField: name) }
            if let body = connection.body { request.httpBody = Data(body) }
        }
        let started: URLSessionDataTask? = state.withLock { s in
            guard s.running, s.generation == generation, let session = s.session else { return nil }
            let lastEventID = s.parser.lastEventID
            // An id with a control character cannot be a field value: the reconnection goes without it.
            if !lastEventID.isEmpty, HeaderFieldCheck.isFieldValue(lastEventID) { request.setValue(lastEventID, forHTTPHeaderField: "Last-Event-ID") }
            let task = session.dataTask(with: request)
            s.task = task
            s.failure = nil
            s.halfOpen = false
            s.refused = false
            s.parser = s.parser.forNextConnection()
            s.reader = configuration.connection?.events.reader(maxBytes: configuration.maxEventBytes)
            s.lastActivity = configuration.clock.now()
            return task
        }
        guard let started else { return }
        startWatchdog(for: started, generation: generation)
        started.resume()
    }

    /// Sleeps until `lastActivity + deadline`, again while bytes keep coming; then closes the connection.
    private func startWatchdog(for task: URLSessionDataTask, generation: Int) {
        let deadline = heartbeatDeadline
        let clock = configuration.clock
        let start = clock.now()
        let watch = Task { [weak self, control] in
            // Sleeps to the mark; wakes again while bytes came meanwhile; ends when the connection is gone or closed.
            var wake: Duration? = start + deadline
            while let due = wake {
                guard (try? await clock.sleep(until: due)) != nil, let self else { return }
                wake = self.state.withLock { s -> Duration? in
                    guard s.generation == generation, s.task === task else { return nil }
                    let due = s.lastActivity + deadline
                    guard clock.now() >= due else { return due }
                    s.failure = "no heartbeat for \(deadline.milliseconds) ms: the connection is half-open"
                    s.halfOpen = true
                    control.async { task.cancel() }   // `control` never waits on this lock
                    return nil
                }
            }
        }
        install(watch, for: nil)
    }

    /// Makes `timer` the stream's one timer, cancelling the old; cancels `timer` if `generation` is stale.
    private func install(_ timer: Task<Void, Never>, for generation: Int?) {
        let replaced = state.withLock { s -> Task<Void, Never>? in
            if let generation, !s.running || s.generation != generation { return timer }
            defer { s.timer = timer }
            return s.timer
        }
        replaced?.cancel()
    }

    /// Connects again after `delay` on the configured clock; ``stop()`` cancels the wait.
    private func scheduleReconnection(after delay: Duration, generation: Int) {
        let clock = configuration.clock
        let due = clock.now() + delay
        let wait = Task { [weak self, control] in
            do {
                try await clock.sleep(until: due)
            } catch {
                return
            }
            guard let self else { return }
            control.async { self.connect(generation) }
        }
        install(wait, for: generation)
    }

    private func signal(_ signal: Signal) {
        signals.async { [onSignal] in onSignal(signal) }
    }

    func session(
        received response: URLResponse, for task: URLSessionDataTask,
        decide: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let disposition = disposition(of: response, for: task)
        decide(disposition)
        // FoundationNetworking does not end a task cancelled here while the server keeps it open.
        if disposition == .cancel { control.async { task.cancel() } }
    }

    /// Whether an answer is a stream to read: 200 with `text/event-stream`.
    private func disposition(of response: URLResponse, for task: URLSessionDataTask) -> URLSession.ResponseDisposition {
        let http = response as? HTTPURLResponse
        let status = http?.statusCode ?? 0
        let type = (http?.value(forHTTPHeaderField: "Content-Type") ?? "").lowercased()
        // The MIME type's essence, parameters (`; charset=utf-8`) and whitespace aside (WHATWG).
        let essence = type.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first.map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        let accepted = status == 200 && essence == "text/event-stream"
        let current: Bool = state.withLock { s in
            guard s.task === task else { return false }
            if accepted {
                s.failures = 0
                s.lastActivity = configuration.clock.now()
            } else if status == 204 {
                s.running = false
                s.refused = true
                s.failure = "the server answered 204: no stream for this client"
            } else {
                s.refused = (400..<500).contains(status) && status != 408 && status != 429
                s.failure = status == 200 ? "the answer is not an event stream (\(type.isEmpty ? "no Content-Type" : type))" : "HTTP \(status)"
            }
            return true
        }
        guard current else { return .cancel }
        if accepted { signal(.opened) }
        return accepted ? .allow : .cancel
    }

    func session(received data: Data, for task: URLSessionDataTask) {
        // Only the framing runs under the lock; the endpoint's reader (which may parse JSON)
        // runs outside it, taken out and put back (deliveries for one task come one at a time).
        let fed: Result<([ServerSentEvent], (any StreamEventReader)?), EventStreamParser.Overflow>? = state.withLock { s in
            guard s.task === task else { return nil }
            s.lastActivity = configuration.clock.now()
            return Result { () throws(EventStreamParser.Overflow) in
                let events = try s.parser.feed(data)
                defer { s.reader = nil }
                return (events, s.reader)
            }
        }
        switch fed {
        case nil: return
        case .failure(let overflow):
            state.withLock { $0.failure = overflow.description }
            control.async { task.cancel() }
        case .success(let (events, taken)):
            let signals: [Signal]
            if var reader = taken {
                signals = events.compactMap { reader.read($0).map(Signal.event) }
                state.withLock { s in if s.task === task { s.reader = reader } }
            } else {
                // Routed on the data's `type`, whatever the SSE `event:` name.
                signals = events.compactMap(Self.refetch(in:))
            }
            for meaning in signals { signal(meaning) }
        }
    }

    func session(completed task: URLSessionTask, error: (any Error)?) {
        let next: (reason: String, delay: Duration?, halfOpen: Bool, refused: Bool, generation: Int)? = state.withLock { s in
            guard s.task === task else { return nil }
            s.task = nil
            s.timer?.cancel()
            s.timer = nil
            let reason = s.failure ?? (error.map { URLSessionTransport.map($0).description } ?? "the server ended the stream")
            guard s.running else { return (reason, nil, s.halfOpen, s.refused, s.generation) }
            s.failures += 1
            var delay = configuration.backoff.delay(afterFailures: s.failures, using: &s.random)
            // `retry:` is the least wait (WHATWG allows more); jitter on top spreads streams out.
            if let retry = s.parser.retry { delay += min(retry, .seconds(3_600)) }
            return (reason, delay, s.halfOpen, s.refused, s.generation)
        }
        guard let next else { return }
        signal(.closed(reason: next.reason, retryIn: next.delay, halfOpen: next.halfOpen, refused: next.refused))
        if let delay = next.delay { scheduleReconnection(after: delay, generation: next.generation) }
    }

    /// Follows a redirect only under the HTTPS rule, stripping credentials off-origin; a refusal ends this connection.
    func session(redirecting task: URLSessionTask, to request: URLRequest, decide: @escaping @Sendable (URLRequest?) -> Void) {
        if let refusal = refusal(ofRedirectTo: request, allowInsecureHTTP: configuration.allowInsecureHTTP) {
            state.withLock { s in
                if s.task === task { s.failure = "redirect refused: \(refusal.description)" }
            }
            decide(nil)
            control.async { task.cancel() }
            return
        }
        decide(credentialsLeftBehind(in: request, redirecting: task))
    }

    /// A `refetchEvaluation` in an event's JSON data (Docs/FlagDocument.md); nil for anything else.
    static func refetch(in event: ServerSentEvent) -> Signal? {
        guard let value = try? FlagJSON.parse(Array(event.data.utf8)), case .object(let data) = value,
            data["type"] == "refetchEvaluation"
        else { return nil }
        let etag = data["etag"]?.stringValue
        let lastModified: String?
        switch data["lastModified"] {
        case .int(let seconds)?: lastModified = String(seconds)
        // Seconds beyond `Int64` (a hostile or broken event) are no date at all, not a crash.
        case .double(let seconds)?: lastModified = Int64(exactly: seconds.rounded(.towardZero)).map { String($0) }
        case .string(let text)?: lastModified = text
        default: lastModified = nil
        }
        return .refetch(etag: etag, lastModified: lastModified)
    }
}
