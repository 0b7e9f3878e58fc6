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
            let members = s.members
            s.nextFetchID += 1
            let id = s.nextFetchID
            let task = Task { await self.fetch(context, members: members, generation: generation, id: id) }
            s.inFlight = (generation, id, task)
            return .flight(task)
        }
        switch start {
        case .skip(let reason):
            if !pathUp { activation.withLock { _ in enterFallback(reason: reason, status: nil) } }
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

    /// One fetch for the identity `context`: every member fetched (in parallel), judged by
    /// the gate, merged when there are several, then activated, confirmed or rejected.
    func fetch(_ context: EvaluationContext, members: [EvaluationContext], generation: Int, id: Int) async -> FetchOutcome {
        let started = clock.now()
        let answers = await fetchMembers(members)
        // The request is over: leave the slot now, so a refresh from here on sends a new
        // request instead of joining this one's activation (which may still write to disk).
        state.withLock { s in
            if s.inFlight?.id == id { s.inFlight = nil }
        }
        let current = state.withLock { $0.generation == generation && !$0.shutDown }
        guard current else { return .discarded }
        let latency = clock.now() - started
        let outcome = await apply(answers, for: context, members: members, generation: generation, latency: latency)
        let kind: FetchResultKind? =
            switch outcome {
            case .updated: .updated
            case .unchanged: .unchanged
            case .rejected: .rejected
            case .failed: .failed
            case .discarded, .skipped: nil
            }
        if let kind { serving.emit(.fetchCompleted(latencyMilliseconds: Int(latency.milliseconds), result: kind)) }
        return outcome
    }

    /// Combines the members' answers: any failure fails the fetch, any rejection rejects it,
    /// all 304s confirm what is served, else the (merged) snapshot is activated.
    func apply(
        _ answers: [MemberAnswer], for context: EvaluationContext, members: [EvaluationContext], generation: Int,
        latency: Duration
    ) async -> FetchOutcome {
        var snapshots: [FlagSnapshot] = []
        var rejections: [PayloadGate.Rejection] = []
        var unknownKeys: [String] = []
        var anyFresh = false
        for answer in answers {
            switch answer {
            case .failed(.cancelled): return .discarded
            case .failed(let error): return failed(error, generation: generation)
            case .rejected(let rejection): rejections.append(rejection)
            case .unchanged(let previous): snapshots.append(previous)
            case .fresh(let snapshot, let unknown):
                anyFresh = true
                snapshots.append(snapshot)
                unknownKeys.append(contentsOf: unknown)
            }
        }
        if !rejections.isEmpty { return await reject(rejections, for: context, generation: generation) }
        guard anyFresh else { return confirm(generation: generation) }
        if members.count == 1 {
            return await activate(snapshots[0], for: context, generation: generation, latency: latency, unknownKeys: unknownKeys)
        }
        let merged = configuration.merge.merge(
            Array(zip(members, snapshots)), killSwitchKey: serving.killSwitchKey, identity: context)
        let byMember = Dictionary(zip(members.map(\.fingerprint), snapshots), uniquingKeysWith: { first, _ in first })
        return await activate(
            merged, for: context, generation: generation, latency: latency, unknownKeys: unknownKeys, members: byMember)
    }

    /// A new snapshot: serve it, then persist it off the executor.
    func activate(
        _ snapshot: FlagSnapshot, for context: EvaluationContext, generation: Int, latency: Duration,
        unknownKeys: [String] = [], members: [String: FlagSnapshot]? = nil
    ) async -> FetchOutcome {
        let network = snapshot.servedFrom(.network)
        let changed: Set<String>? = activation.withLock { _ in
            guard state.withLock({ $0.generation == generation }) else { return nil }
            if let members { state.withLock { $0.memberSnapshots = members } }
            let previous = serving.status
            let keys = serving.activate(network, status: .ready, reasonOverride: nil)
            serving.emit(.activated(version: network.version, latencyMilliseconds: Int(latency.milliseconds)))
            if !unknownKeys.isEmpty { serving.emit(.unknownKeys(Array(Set(unknownKeys)).sorted())) }
            succeeded(from: previous)
            announceReady(from: previous)
            return keys
        }
        guard let changed else { return .discarded }
        await persist(network, for: context)
        return changed.isEmpty ? .unchanged : .updated(changed)
    }

    /// Payloads that broke the schema: the Last-Known-Good stays (labelled as the fallback,
    /// status `ERROR` or `STALE`), each newly rejected payload is reported with all its
    /// violations, and a kill switch any of them turns on is applied and persisted anyway.
    func reject(_ rejections: [PayloadGate.Rejection], for context: EvaluationContext, generation: Int) async -> FetchOutcome {
        let violations = rejections.flatMap(\.violations)
        let error = FetchError.invalidPayload(violations)
        let applied: (killed: FlagSnapshot?, done: Bool) = activation.withLock { _ in
            let current = state.withLock { s -> Bool in
                guard s.generation == generation else { return false }
                // The service answered: no backoff, the next poll comes at the usual interval.
                s.failures = 0
                s.retryNotBefore = nil
                s.lastError = error
                return true
            }
            guard current else { return (nil, false) }
            for rejection in rejections where !rejection.remembered {
                serving.emit(.payloadRejected(violations: rejection.violations, fingerprint: rejection.fingerprint))
            }
            var killed: FlagSnapshot?
            if rejections.contains(where: \.killSwitchOn), !serving.isKillSwitchActive {
                killed = serving.snapshot.withKillSwitch(serving.killSwitchKey, for: context, at: wallClock())
            }
            enterFallback(reason: error.description, status: nil, overlay: killed)
            return (killed, true)
        }
        guard applied.done else { return .discarded }
        if let killed = applied.killed { await persist(killed, for: context) }
        return .rejected(violations)
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
            succeeded(from: previous)
            announceReady(from: previous)
            return true
        }
        return applied ? .unchanged : .discarded
    }

    /// The bookkeeping of a successful fetch; `previous` is the status before it.
    func succeeded(from previous: ProviderStatus) {
        state.withLock { s in
            s.failures = 0
            s.retryNotBefore = nil
            s.lastError = nil
        }
        if previous != .ready { serving.emit(.modeChanged(.online, reason: "fetch succeeded")) }
    }

    func announceReady(from previous: ProviderStatus) {
        if previous != .ready { serving.emit(.ready) }
        if previous == .reconciling { serving.emit(.contextChanged) }
        notifyStatusWaiters()
    }

    func failed(_ error: FetchError, generation: Int) -> FetchOutcome {
        let now = clock.now()
        let stillCurrent: Bool = activation.withLock { _ in
            let current = state.withLock { s -> Bool in
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
            guard current else { return false }
            serving.emit(.fetchFailed(error))
            if error.isFatal { serving.emit(.error(.providerFatal, message: error.description)) }
            enterFallback(reason: error.description, status: error.isFatal ? .fatal : nil)
            return true
        }
        return stillCurrent ? .failed(error) : .discarded
    }

    /// Serves what is served as the Last-Known-Good (or `overlay`, values with the kill switch
    /// on) and sets the failure status — `STALE` past the TTL, else `ERROR`, or `status` when
    /// given — in one change of the served state, then reports it. The caller holds
    /// `activation`, so no other change of the served state can come between.
    func enterFallback(reason: String, status forced: ProviderStatus?, overlay: FlagSnapshot? = nil) {
        let result = serving.fallBack(forcing: forced, overlay: overlay)
        if result.previous == .ready { serving.emit(.modeChanged(.fallback, reason: reason)) }
        if result.previous != result.next {
            switch result.next {
            case .stale: serving.emit(.stale(age: result.snapshot.age(at: wallClock())))
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
