import Foundation

extension FeatureFlagProvider {
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
    func nextAttempt(after outcome: FetchOutcome) -> Duration? {
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

    func jitteredPollInterval() -> Duration {
        let factor = random.withLock { Double.random(in: (1 - configuration.jitter)...(1 + configuration.jitter), using: &$0) }
        return configuration.pollInterval * factor
    }

    /// Sleeps until `deadline` (forever when nil) or a wake-up, whichever comes first.
    func sleep(until deadline: Duration?) async {
        let clock = self.clock
        let wakeup = self.wakeup
        await withTaskGroup(of: Void.self) { group in
            if let deadline { group.addTask { try? await clock.sleep(until: deadline) } }
            group.addTask { await wakeup.wait() }
            await group.next()
            group.cancelAll()
        }
    }

    func pathChanged(_ reachable: Bool) {
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
            activation.withLock { _ in enterFallback(reason: "no network path", status: nil) }
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

    static func settled(_ status: ProviderStatus) -> Bool {
        status != .notReady && status != .reconciling
    }

    func notifyStatusWaiters(force: Bool = false) {
        guard force || Self.settled(status) else { return }
        let waiters = statusWaiters.withLock { w in
            defer { w.removeAll() }
            return w
        }
        for waiter in waiters { waiter.resume() }
    }
}
