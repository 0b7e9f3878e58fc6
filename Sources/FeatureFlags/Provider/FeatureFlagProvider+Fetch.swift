import Foundation

extension FeatureFlagProvider {
    // MARK: Fetching

    /// Fetches for the current context now (joining a fetch already in flight for it) and
    /// applies the result. Sends nothing when there is no network path, a `Retry-After` is
    /// still running, credentials were rejected, or the provider shut down.
    @discardableResult
    public func refresh() async -> FetchOutcome {
        enum Start {
            case skip(String)
            case flight(Task<FetchOutcome, Never>)
        }
        let pathUp = reachability.isReachable
        let start: Start = state.withLock { s in
            s.pathUp = pathUp
            if let reason = Self.skipReason(s, now: clock.now()) { return .skip(reason) }
            if let flight = s.inFlight, flight.generation == s.generation { return .flight(flight.task) }
            let generation = s.generation
            let context = s.context
            s.nextFetchID += 1
            let id = s.nextFetchID
            let task = Task { await self.fetch(context, generation: generation, id: id) }
            s.inFlight = (generation, id, task)
            return .flight(task)
        }
        switch start {
        case .skip(let reason):
            if !pathUp { enterFallback(reason: reason, status: nil) }
            return .skipped(reason)
        case .flight(let task):
            return await task.value
        }
    }

    static func skipReason(_ s: State, now: Duration) -> String? {
        if s.shutDown { return "shut down" }
        if s.fatal { return "stopped after a fatal error" }
        if !s.pathUp { return "no network path" }
        if let notBefore = s.retryNotBefore, now < notBefore { return "waiting for Retry-After" }
        return nil
    }

    func fetch(_ context: EvaluationContext, generation: Int, id: Int, retried: Bool = false) async -> FetchOutcome {
        let started = clock.now()
        let result: Result<FlagFetchResult, FetchError>
        do {
            result = .success(try await online.fetch(for: context))
        } catch {
            result = .failure(error)
        }
        // The request is over: leave the slot now, so a refresh from here on sends a new
        // request instead of joining this one's activation (which may still write to disk).
        state.withLock { s in
            if s.inFlight?.id == id { s.inFlight = nil }
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
                return await fetch(context, generation: generation, id: id, retried: true)
            }
            return confirm(generation: generation)
        case .failure(.cancelled):
            return .discarded
        case .failure(let error):
            return failed(error, generation: generation)
        }
    }

    /// A new snapshot: serve it, then persist it off the executor.
    func activate(_ snapshot: FlagSnapshot, for context: EvaluationContext, generation: Int, latency: Duration) async -> FetchOutcome {
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
    func confirm(generation: Int) -> FetchOutcome {
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

    func succeeded() {
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

    func announceReady(from previous: ProviderStatus) {
        if previous != .ready { serving.emit(.ready) }
        if previous == .reconciling { serving.emit(.contextChanged) }
        notifyStatusWaiters()
    }

    func failed(_ error: FetchError, generation: Int) -> FetchOutcome {
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
    func enterFallback(reason: String, status forced: ProviderStatus?) {
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

    func persist(_ snapshot: FlagSnapshot, for context: EvaluationContext) async {
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
}
