import Foundation

/// The client an app injects: it serves the Last-Known-Good at once, fetches from the flag
/// service within the online client's deadline (2 s by default), polls, follows
/// reachability, re-fetches when the context changes, and applies the kill switch.
///
/// ```swift
/// let fallback = FallbackClient(context: user)                 // at launch, synchronous
/// let provider = FeatureFlagProvider(context: user, online: online, fallback: fallback)
/// Task { await provider.run() }                               // polling, until cancelled
/// _ = await provider.waitUntilReady(timeout: .seconds(2))     // splash screen
/// ```
///
/// Lifecycle (``status``): `NOT_READY` while serving what the fallback had → `READY` after a
/// fetch succeeds; `ERROR` after a failure (or with no network path), `STALE` instead when
/// the served values are older than their TTL; `FATAL` on 401/403 or a refused plain-HTTP
/// URL, after which no request is sent; `RECONCILING` from ``identify(_:)`` until the new
/// context's fetch ends.
public final class FeatureFlagProvider: FeatureFlagClient {
    private struct State {
        var context: EvaluationContext
        var generation = 0
        var mode: ProviderMode = .fallback
        var pathUp: Bool
        var failures = 0
        var retryNotBefore: Duration?
        var lastError: FetchError?
        var inFlight: (generation: Int, task: Task<FetchOutcome, Never>)?
        var running = false
        var fatal = false
        var shutDown = false
    }

    /// The online client (its deadline is the fetch budget).
    public let online: OnlineClient
    /// The Last-Known-Good store beneath.
    public let fallback: FallbackClient
    /// The network path monitor.
    public let reachability: any Reachability
    /// Polling and backoff.
    public let configuration: Configuration

    private let serving: FlagServing
    private let state: Locked<State>
    /// Orders identify against activations, so an answer for an old context never lands.
    private let activation = Locked(())
    private let clock: any ElapsedClock
    private let wallClock: @Sendable () -> Date
    private let random: Locked<any RandomNumberGenerator & Sendable>
    private let wakeup = Wakeup()
    private let statusWaiters = Locked<[CheckedContinuation<Void, Never>]>([])
    /// Disk writes happen here, never on Swift's global executor.
    private let io = DispatchQueue(label: "FeatureFlags.FeatureFlagProvider.io")

    /// A provider for `context`, serving `fallback`'s Last-Known-Good for it at once.
    /// - Parameters:
    ///   - reachability: the path monitor; ``SystemReachability/make()`` by default.
    ///   - clock: schedules polls, backoff and `Retry-After` (inject a test clock in tests).
    ///   - now: wall-clock time for TTLs and ages.
    ///   - random: the jitter source.
    public init(
        context: EvaluationContext,
        online: OnlineClient,
        fallback: FallbackClient,
        reachability: any Reachability = SystemReachability.make(),
        configuration: Configuration = Configuration(),
        clock: any Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = { Date() },
        random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
    ) {
        self.online = online
        self.fallback = fallback
        self.reachability = reachability
        self.configuration = configuration
        self.clock = makeElapsedClock(clock)
        self.wallClock = now
        self.random = Locked(random)
        let lkg = fallback.currentContextFingerprint == context.fingerprint
            ? fallback.storedSnapshot(for: context) : fallback.select(context)
        online.setETag(lkg?.etag, for: context)
        state = Locked(State(context: context, pathUp: reachability.isReachable))
        serving = FlagServing(
            snapshot: lkg?.servedFrom(.fallback) ?? .empty, defaults: fallback.bundledDefaults, status: .notReady,
            reasonOverride: .cached, killSwitchKey: fallback.killSwitchKey, now: now)
        // What the fallback found at load (rejected file, bad bundled defaults) is the
        // provider's news too; its own READY is not: the provider is not ready yet.
        for event in fallback.recentEvents where event != .ready && event != .killSwitch(active: true) {
            serving.emit(event)
        }
        if serving.isKillSwitchActive { serving.emit(.killSwitch(active: true)) }
    }

    // MARK: FeatureFlagClient

    /// The flag's value; never blocks, never throws.
    public func value<Value>(_ key: FlagKey<Value>) -> Value { serving.value(key) }
    /// The raw value of `name` (nil when missing, valueless or killed).
    public func flagValue(_ name: String) -> FlagValue? { serving.lookup(name) }
    /// The value and where it came from: `network` when online, `fallback` (reason `CACHED`,
    /// or `STALE` past the TTL) otherwise, then bundled and code defaults, or the kill switch.
    public func details<Value>(_ key: FlagKey<Value>) -> FlagDetails<Value> { serving.details(key) }
    /// The snapshot served now.
    public var snapshot: FlagSnapshot { serving.snapshot }
    /// The status now (see the type's documentation for the lifecycle).
    public var status: ProviderStatus { serving.status }
    /// Whether the kill switch is on.
    public var isKillSwitchActive: Bool { serving.isKillSwitchActive }
    /// Changes of served values.
    public func changes() -> AsyncStream<FlagChange> { serving.changeBroadcaster.subscribe() }
    /// Lifecycle and diagnostics; a new stream first receives the last 32 events.
    public func events() -> AsyncStream<FlagEvent> { serving.eventBroadcaster.subscribe() }
    /// The most recent events (up to 32), oldest first.
    public var recentEvents: [FlagEvent] { serving.eventBroadcaster.history }

    // MARK: State

    /// The context being served.
    public var context: EvaluationContext { state.withLock { $0.context } }
    /// Whether values come from the service now or from the fallback.
    public var mode: ProviderMode { state.withLock { $0.mode } }
    /// The last fetch failure, cleared by a success.
    public var lastError: FetchError? { state.withLock { $0.lastError } }
    /// Consecutive failed fetches.
    public var consecutiveFailures: Int { state.withLock { $0.failures } }

    // MARK: Identify

    /// Switches to `context`: serves its Last-Known-Good at once (code and bundled defaults
    /// if it has none — never the previous context's values), status `RECONCILING`, and wakes
    /// ``run()`` to fetch for it. Answers still on their way for earlier contexts are dropped.
    /// Calling it with the current context does nothing.
    public func identify(_ context: EvaluationContext) {
        var superseded: Task<FetchOutcome, Never>?
        let switched: Bool = activation.withLock { _ in
            let accepted = state.withLock { s -> Bool in
                guard s.context != context, !s.shutDown else { return false }
                s.context = context
                s.generation += 1
                s.mode = .fallback
                superseded = s.inFlight?.task
                s.inFlight = nil
                return true
            }
            guard accepted else { return false }
            let lkg = fallback.select(context)
            online.setETag(lkg?.etag, for: context)
            serving.activate(lkg?.servedFrom(.fallback) ?? .empty, status: .reconciling, reasonOverride: .cached)
            serving.emit(.reconciling)
            return true
        }
        guard switched else { return }
        superseded?.cancel()
        wakeup.fire()
    }

    // MARK: Fetching

    /// Fetches for the current context now (joining a fetch already in flight for it) and
    /// applies the result. Sends nothing when there is no network path, a `Retry-After` is
    /// still running, credentials were rejected, or the provider shut down.
    @discardableResult
    public func refresh() async -> FetchOutcome {
        enum Start {
            case skip(String)
            case flight(generation: Int, task: Task<FetchOutcome, Never>)
        }
        let pathUp = reachability.isReachable
        let start: Start = state.withLock { s in
            s.pathUp = pathUp
            if let reason = Self.skipReason(s, now: clock.now()) { return .skip(reason) }
            if let flight = s.inFlight, flight.generation == s.generation { return .flight(generation: flight.generation, task: flight.task) }
            let generation = s.generation
            let context = s.context
            let task = Task { await self.fetch(context, generation: generation) }
            s.inFlight = (generation, task)
            return .flight(generation: generation, task: task)
        }
        switch start {
        case .skip(let reason):
            if !pathUp { enterFallback(reason: reason, status: nil) }
            return .skipped(reason)
        case .flight(let generation, let task):
            let outcome = await task.value
            state.withLock { s in
                if s.inFlight?.generation == generation, s.inFlight?.task == task { s.inFlight = nil }
            }
            return outcome
        }
    }

    private static func skipReason(_ s: State, now: Duration) -> String? {
        if s.shutDown { return "shut down" }
        if s.fatal { return "stopped after a fatal error" }
        if !s.pathUp { return "no network path" }
        if let notBefore = s.retryNotBefore, now < notBefore { return "waiting for Retry-After" }
        return nil
    }

    private func fetch(_ context: EvaluationContext, generation: Int, retried: Bool = false) async -> FetchOutcome {
        let started = clock.now()
        let result: Result<FlagFetchResult, FetchError>
        do {
            result = .success(try await online.fetch(for: context))
        } catch {
            result = .failure(error)
        }
        let current = state.withLock { $0.generation == generation && !$0.shutDown }
        guard current else { return .discarded }
        switch result {
        case .success(.snapshot(let snapshot)):
            return await activate(snapshot, for: context, generation: generation, latency: clock.now() - started)
        case .success(.notModified):
            guard serving.snapshot.contextFingerprint == context.fingerprint else {
                // A 304 for values we do not hold (the ETag outlived its snapshot): ask again
                // in full, once; a service that answers 304 to an unconditional request is broken.
                online.setETag(nil, for: context)
                if retried {
                    let error = FetchError.decode(FlagEndpointError(.general, "304 Not Modified to a request without If-None-Match"))
                    return failed(error, generation: generation)
                }
                return await fetch(context, generation: generation, retried: true)
            }
            return confirm(generation: generation)
        case .failure(.cancelled):
            return .discarded
        case .failure(let error):
            return failed(error, generation: generation)
        }
    }

    /// A new snapshot: serve it, then persist it off the executor.
    private func activate(_ snapshot: FlagSnapshot, for context: EvaluationContext, generation: Int, latency: Duration) async -> FetchOutcome {
        let network = snapshot.servedFrom(.network)
        let changed: Set<String>? = activation.withLock { _ in
            guard state.withLock({ $0.generation == generation }) else { return nil }
            let previous = serving.status
            let keys = serving.activate(network, status: .ready, reasonOverride: nil)
            serving.emit(.activated(version: network.version, latencyMilliseconds: Int(latency.milliseconds)))
            succeeded()
            announceReady(from: previous)
            return keys
        }
        guard let changed else { return .discarded }
        await persist(network, for: context)
        return changed.isEmpty ? .unchanged : .updated(changed)
    }

    /// A 304: the values served are current; nothing decoded, nothing written.
    private func confirm(generation: Int) -> FetchOutcome {
        let applied: Bool = activation.withLock { _ in
            guard state.withLock({ $0.generation == generation }) else { return false }
            let previous = serving.status
            let current = serving.snapshot
            let confirmed = FlagSnapshot(
                flags: current.flags, version: current.version, fetchedAt: wallClock(), ttl: current.ttl,
                etag: current.etag, origin: current.origin == .codeDefault ? .codeDefault : .network,
                contextFingerprint: current.contextFingerprint)
            serving.activate(confirmed, status: .ready, reasonOverride: nil)
            succeeded()
            announceReady(from: previous)
            return true
        }
        return applied ? .unchanged : .discarded
    }

    private func succeeded() {
        let wasFallback = state.withLock { s -> Bool in
            defer {
                s.mode = .online
                s.failures = 0
                s.retryNotBefore = nil
                s.lastError = nil
            }
            return s.mode == .fallback
        }
        if wasFallback { serving.emit(.modeChanged(.online, reason: "fetch succeeded")) }
    }

    private func announceReady(from previous: ProviderStatus) {
        if previous != .ready { serving.emit(.ready) }
        if previous == .reconciling { serving.emit(.contextChanged) }
        notifyStatusWaiters()
    }

    private func failed(_ error: FetchError, generation: Int) -> FetchOutcome {
        let now = clock.now()
        let stillCurrent = state.withLock { s -> Bool in
            guard s.generation == generation else { return false }
            s.failures += 1
            s.lastError = error
            if error.isFatal { s.fatal = true }
            if case .httpStatus(_, let retryAfter?, _) = error {
                let wait = min(Duration.seconds(retryAfter), configuration.maximumRetryAfter)
                s.retryNotBefore = now + wait
            }
            return true
        }
        guard stillCurrent else { return .discarded }
        serving.emit(.fetchFailed(error))
        if error.isFatal {
            serving.setStatus(.fatal)
            serving.emit(.error(.providerFatal, message: error.description))
            enterFallback(reason: error.description, status: .fatal)
        } else {
            enterFallback(reason: error.description, status: nil)
        }
        return .failed(error)
    }

    /// Marks the fallback as the source and sets the failure status: `STALE` past the TTL,
    /// else `ERROR` (or `status` when given).
    private func enterFallback(reason: String, status forced: ProviderStatus?) {
        let wasOnline = state.withLock { s -> Bool in
            defer { s.mode = .fallback }
            return s.mode == .online
        }
        if wasOnline { serving.emit(.modeChanged(.fallback, reason: reason)) }
        let snapshot = serving.snapshot
        let expired = snapshot.origin != .codeDefault && snapshot.isExpired(at: wallClock())
        let next = forced ?? (expired ? .stale : .error)
        let previous = serving.setStatus(next)
        if snapshot.origin == .network || snapshot.origin == .fallback {
            // Same values, now honestly labelled: the Last-Known-Good, cached or stale.
            serving.activate(snapshot.servedFrom(.fallback), reasonOverride: expired ? .stale : .cached)
        }
        if previous != next {
            switch next {
            case .stale: serving.emit(.stale(age: snapshot.age(at: wallClock())))
            case .error: serving.emit(.error(.general, message: reason))
            default: break
            }
        }
        notifyStatusWaiters()
    }

    private func persist(_ snapshot: FlagSnapshot, for context: EvaluationContext) async {
        let fallback = self.fallback
        let failure: FallbackWriteError? = await withCheckedContinuation { continuation in
            io.async {
                do throws(FallbackWriteError) {
                    try fallback.save(snapshot, for: context)
                    continuation.resume(returning: nil)
                } catch {
                    continuation.resume(returning: error)
                }
            }
        }
        if let failure { serving.emit(.fallbackWriteFailed(reason: failure.reason)) }
    }

    // MARK: Running

    /// Fetches at once, then polls every ``Configuration/pollInterval`` (± jitter) until the
    /// calling task is cancelled or ``shutdown()`` is called. Failures back off exponentially
    /// with full jitter up to the poll interval; 429/503 wait at least their `Retry-After`.
    /// Without a network path nothing is sent; the path's return (or ``identify(_:)``)
    /// triggers a fetch at once. Returns after a fatal error. Only one `run()` at a time:
    /// a second call returns immediately.
    public func run() async {
        let first = state.withLock { s -> Bool in
            if s.running || s.shutDown { return false }
            s.running = true
            return true
        }
        guard first else { return }
        let watcher = Task { [reachability, weak self] in
            for await reachable in reachability.updates() {
                guard let self else { return }
                self.pathChanged(reachable)
            }
        }
        defer {
            watcher.cancel()
            state.withLock { $0.running = false }
        }
        var outcome = await refresh()
        while !Task.isCancelled {
            let stop = state.withLock { $0.shutDown || $0.fatal }
            if stop { return }
            let deadline = nextAttempt(after: outcome)
            await sleep(until: deadline)
            if Task.isCancelled { return }
            outcome = await refresh()
        }
    }

    /// When to try next: nil waits for a wake-up (offline).
    private func nextAttempt(after outcome: FetchOutcome) -> Duration? {
        let now = clock.now()
        let (pathUp, failures, notBefore) = state.withLock { ($0.pathUp, $0.failures, $0.retryNotBefore) }
        guard pathUp else { return nil }
        var delay: Duration
        switch outcome {
        case .failed:
            delay = random.withLock { configuration.backoff.delay(afterFailures: failures, using: &$0) }
        default:
            delay = failures > 0
                ? random.withLock { configuration.backoff.delay(afterFailures: failures, using: &$0) }
                : jitteredPollInterval()
        }
        var next = now + delay
        if let notBefore, notBefore > next { next = notBefore }
        return next
    }

    private func jitteredPollInterval() -> Duration {
        let factor = random.withLock { Double.random(in: (1 - configuration.jitter)...(1 + configuration.jitter), using: &$0) }
        return configuration.pollInterval * factor
    }

    /// Sleeps until `deadline` (forever when nil) or a wake-up, whichever comes first.
    private func sleep(until deadline: Duration?) async {
        let clock = self.clock
        let wakeup = self.wakeup
        await withTaskGroup(of: Void.self) { group in
            if let deadline { group.addTask { try? await clock.sleep(until: deadline) } }
            group.addTask { await wakeup.wait() }
            await group.next()
            group.cancelAll()
        }
    }

    private func pathChanged(_ reachable: Bool) {
        let changed = state.withLock { s -> Bool in
            defer { s.pathUp = reachable }
            return s.pathUp != reachable
        }
        guard changed else { return }
        if reachable {
            wakeup.fire()
        } else {
            let inFlight = state.withLock { s -> Task<FetchOutcome, Never>? in
                defer { s.inFlight = nil }
                return s.inFlight?.task
            }
            inFlight?.cancel()
            enterFallback(reason: "no network path", status: nil)
        }
    }

    // MARK: Waiting

    /// Waits until the first fetch for the current context has ended — `READY`, `ERROR`,
    /// `STALE` or `FATAL` — or `timeout` passes on the provider's clock, and returns the status.
    /// For a splash screen: values are readable all along; this only says whether they are fresh.
    public func waitUntilReady(timeout: Duration) async -> ProviderStatus {
        let deadline = clock.now() + timeout
        let clock = self.clock
        while !Self.settled(status) {
            if clock.now() >= deadline { break }
            let woke = await withTaskGroup(of: Bool.self) { group in
                group.addTask {
                    try? await clock.sleep(until: deadline)
                    return false
                }
                group.addTask { [self] in
                    await withCheckedContinuation { continuation in
                        let settled = statusWaiters.withLock { waiters -> Bool in
                            if Self.settled(status) { return true }
                            waiters.append(continuation)
                            return false
                        }
                        if settled { continuation.resume() }
                    }
                    return true
                }
                let first = await group.next() ?? false
                group.cancelAll()
                if !first { notifyStatusWaiters(force: true) }
                return first
            }
            if !woke { break }
        }
        return status
    }

    private static func settled(_ status: ProviderStatus) -> Bool {
        status != .notReady && status != .reconciling
    }

    private func notifyStatusWaiters(force: Bool = false) {
        guard force || Self.settled(status) else { return }
        let waiters = statusWaiters.withLock { w in
            defer { w.removeAll() }
            return w
        }
        for waiter in waiters { waiter.resume() }
    }

    // MARK: Shutdown

    /// Stops everything: ``run()`` returns, the fetch in flight is cancelled, the online
    /// client, the reachability monitor and every stream end. Reads keep working with the
    /// values last served. Idempotent.
    public func shutdown() {
        let inFlight: Task<FetchOutcome, Never>?? = state.withLock { s in
            if s.shutDown { return nil }
            s.shutDown = true
            defer { s.inFlight = nil }
            return .some(s.inFlight?.task)
        }
        guard let inFlight else { return }
        inFlight?.cancel()
        wakeup.fire()
        online.shutdown()
        reachability.stop()
        notifyStatusWaiters(force: true)
        serving.finish()
        fallback.shutdown()
    }
}
