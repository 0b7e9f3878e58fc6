import Foundation

extension ProviderState {
    /// The one way provider state changes. Pure: no I/O, no clock, no locks; returns the effects, in order.
    mutating func apply(_ input: ProviderInput, at time: ProviderTime) -> [ProviderEffect] {
        step(input, at: time) + reconcileStreams()
    }

    private mutating func step(_ input: ProviderInput, at time: ProviderTime) -> [ProviderEffect] {
        switch input {
        case .identify(let context, let members, let lastKnownGood, let source, let problem):
            return identify(context, members: members, lastKnownGood: lastKnownGood, source: source, problem: problem, at: time)
        case .refresh(let pathUp, let waiter):
            return refresh(pathUp: pathUp, waiter: waiter, at: time)
        case .launched(let ticket, let task):
            guard var flight, flight.ticket == ticket, flight.task == nil else { return [.cancel(task)] }
            flight.task = task
            self.flight = flight
            return []
        case .fetchEnded(let report):
            return fetchEnded(report, at: time)
        case .pathChanged(let reachable):
            guard pathUp != reachable else { return [] }
            pathUp = reachable
            if reachable { return streams.foreground ? [wakeRunLoop()] : [] }
            return dropFlight() + fallBack(reason: "no network path", forcing: nil, at: time)
        case .unknownValues(let flag, let values):
            guard !values.isEmpty, served.noteUnknown(flag) else { return [] }
            return [.emit(.unknownValues(flag: flag, values: values))]
        case .valuesPublished:
            served.valuesChanged()
            return []
        case .running(let on, let answer):
            let claimed = !on || (!running && !shutDown)
            if claimed { running = on }
            answer?(claimed)
            return []
        case .planNextPoll(let outcome, let answer):
            guard !shutDown, !fatal else {
                answer(.stop)
                return []
            }
            // After an expiry-only wake-up the planned poll stays: redrawing it would postpone it.
            let deadline = keepsPlannedPoll ? plannedPoll : nextAttempt(after: outcome, at: time.elapsed)
            keepsPlannedPoll = false
            plannedPoll = deadline
            // Also wake when the served label expires (TTL or signed `exp`), to label it STALE then.
            let wake = [deadline, expiryDeadline(at: time)].compactMap { $0 }.min()
            answer(.sleep(until: wake))
            return []
        case .takeFetchRequest(let timerDue, let answer):
            let pollDue = timerDue && plannedPoll.map { time.elapsed >= $0 } == true
            let fetch = fetchRequested || (pollDue && pathUp && streams.foreground)
            fetchRequested = false
            answer(fetch)
            guard !fetch, timerDue else { return [] }
            // Due but nothing fetched: the timer was for an expiry (a planned poll stays planned).
            keepsPlannedPoll = !pollDue && plannedPoll != nil
            return reassessExpiry(at: time)
        case .sleep(let sleeper, let id, let resume):
            return sleep(sleeper, id: id, resume: resume)
        case .stopSleeping(let sleeper, let id):
            return stopSleeping(sleeper, id: id)
        case .awaitSettled(let id, let resume):
            if shutDown || Self.isSettled(served.status) { return [.resume(resume)] }
            settleWaiters[id] = resume
            return []
        case .stopWaiting(let id):
            return settleWaiters.removeValue(forKey: id).map { [.resume($0)] } ?? []
        case .shutdown:
            guard !shutDown else { return [] }
            shutDown = true
            streams.queued = nil
            return dropFlight() + releaseSettleWaiters() + [wakeRunLoop(), .stop]
        case .stream(let link, let signal):
            return streamSignal(signal, from: link, at: time)
        case .lifecycle(let foreground):
            return lifecycle(foreground: foreground, at: time)
        case .streamWaitElapsed(let ticket):
            guard streams.deferred?.ticket == ticket else { return [] }
            return startDeferred()
        case .inactivityElapsed(let token):
            guard token == streams.inactivityToken, !streams.foreground else { return [] }
            streams.closedForInactivity = true
            return []
        case .markHealthy(let automatic, let held, let fingerprint, let answer):
            guard safeMode == nil || (held != nil && fingerprint == context.fingerprint) else {
                answer(false)
                return []
            }
            answer(true)
            return markHealthy(automatic: automatic, held: held, at: time)
        case .overrides(let layer, let observer):
            if let observer { overridesObserver = observer }
            overrides = layer
            return serveOverrides()
        }
    }

    /// Serves the overrides — none in safe mode, where an override may be what crashed the app.
    mutating func serveOverrides() -> [ProviderEffect] {
        let next = safeMode == nil ? overrides : nil
        guard served.overrides !== next, !shutDown else { return [] }
        let old = served
        served.overrides = next
        return [.publish(from: old, to: served)]
    }

    // MARK: Identify

    private mutating func identify(
        _ next: EvaluationContext, members nextMembers: [EvaluationContext], lastKnownGood: PreparedSnapshot,
        source: FlagSource, problem: FlagEvent?, at time: ProviderTime
    ) -> [ProviderEffect] {
        guard next != context, !shutDown else { return [] }
        var (lastKnownGood, source) = (lastKnownGood, source)
        if var safe = safeMode {
            // Safe mode serves every identity's healthy values; the stored ones' digest marks the crash values.
            safe.crashDigest = source == .fallback ? LaunchJournal.digest(lastKnownGood.snapshot) : nil
            safeMode = safe
            let healthy = journal.healthy[next.fingerprint]
            lastKnownGood = base.prepare(healthy ?? .empty)
            source = healthy == nil ? .codeDefault : .fallback
        }
        context = next
        members = nextMembers
        generation += 1
        let kept = Set(nextMembers.map(\.fingerprint))
        memory = memory.filter { kept.contains($0.key) }
        var effects = dropFlight()
        // An endpoint's own stream belongs to the old context; the new context's answer names its own.
        if let advertised = streams.advertised, advertised.contains(where: { $0.connection != nil }) {
            streams.advertised = advertised.filter { $0.connection == nil }
        }
        if let problem { effects.append(.emit(problem)) }
        // After a fatal error no fetch follows: the new context's held values are served, still `FATAL`.
        let old = served.serve(
            lastKnownGood, source: source, status: fatal ? .fatal : .reconciling, reasonOverride: lastKnownGood.reasonOnDevice(at: time.date))
        served.context = next
        effects.append(.publish(from: old, to: served))
        if !fatal { effects += [.emit(.reconciling), wakeRunLoop()] }
        return effects
    }

    // MARK: Fetching

    private mutating func refresh(pathUp reachable: Bool, waiter: @escaping FetchWaiter, at time: ProviderTime) -> [ProviderEffect] {
        pathUp = reachable
        if let reason = skipReason(at: time.elapsed) {
            var effects: [ProviderEffect] = [.answer([waiter], .skipped(reason))]
            if !reachable, !shutDown { effects = fallBack(reason: reason, forcing: nil, at: time) + effects }
            return effects
        }
        if var flight {
            flight.waiters.append(waiter)
            self.flight = flight
            return []
        }
        return startFetch(.ask, waiters: [waiter])
    }

    /// Starts a fetch (caller checked none is in flight); unconditional while the streams are unknown.
    /// At launch with kept streams it waits up to ``launchStreamWait`` for them to open, saving a request.
    mutating func startFetch(_ trigger: FetchTrigger, waiters: [FetchWaiter]) -> [ProviderEffect] {
        lastTicket += 1
        let ticket = FetchTicket(generation: generation, id: lastTicket)
        flight = Flight(ticket: ticket, waiters: waiters, task: nil)
        var plan = FetchPlan(
            ticket: ticket, context: context, members: members,
            memory: memory.filter { entry in members.contains { entry.key == $0.fingerprint || entry.key.hasPrefix($0.fingerprint + "@") } })
        plan.trigger = trigger == .ask && configuration.changeStreams && streams.advertised == nil ? .unconditional : trigger
        if plan.trigger == .ask, streams.restored, !streams.openedOnce, !wantedStreams.isEmpty {
            streams.deferred = plan
            return [.scheduleStreamWait(ticket, after: Self.launchStreamWait)]
        }
        return [.startFetch(plan)]
    }

    /// How long a launch fetch waits for kept streams to open.
    static let launchStreamWait = Duration.seconds(1)

    /// Starts the launch fetch held for the streams, if any.
    mutating func startDeferred(unconditional: Bool = false) -> [ProviderEffect] {
        guard var plan = streams.deferred else { return [] }
        streams.deferred = nil
        if unconditional { plan.trigger = .unconditional }
        return [.startFetch(plan)]
    }

    private mutating func fetchEnded(_ report: FetchReport, at time: ProviderTime) -> [ProviderEffect] {
        guard let flight, flight.ticket == report.ticket, report.ticket.generation == generation else { return [] }
        self.flight = nil
        for (fingerprint, kept) in report.memory { memory[fingerprint] = kept }
        validations += report.validations
        switch report.verdict {
        case .cancelled, .failed: break
        default:
            // The service answered (even with a rejected payload): failure bookkeeping restarts.
            streams.lastAnswer = time.elapsed
            failures = 0
            retryNotBefore = nil
            lastError = nil
        }
        if case .fresh(_, _, _, let advertised) = report.verdict {
            streams.advertised = advertised
            streams.restored = false
        }
        if flight.spannedBackground, case .failed(let error) = report.verdict, !error.isFatal {
            return interrupted(waiters: flight.waiters, at: time) + fetchQueued(at: time)
        }
        let notes = report.notes.map { ProviderEffect.emit($0) }
        let before = served.status
        var settled = settle(report, waiters: flight.waiters, at: time)
        if let partial = report.partial, served.status == .ready || served.status == .stale {
            // Some services of a set failed: their flags are their last good values, the set's status ERROR (above
            // STALE, as OpenFeature ranks them) — announced once, not as a `ready` and an `error` at every poll.
            served.status = .error
            settled.removeAll { if case .emit(let event) = $0 { event.kind == .ready } else { false } }
            if before != .error {
                let at = settled.firstIndex { if case .complete = $0 { true } else { false } } ?? settled.endIndex
                settled.insert(.emit(.error(.general, message: partial)), at: at)
            }
        }
        return notes + settled + fetchQueued(at: time)
    }

    /// A non-fatal failure of a fetch that spanned the background (likely a suspension): no `ERROR`,
    /// no backoff; callers hear `discarded` and it is fetched again in the foreground.
    private mutating func interrupted(waiters: [FetchWaiter], at time: ProviderTime) -> [ProviderEffect] {
        let effects: [ProviderEffect] = [.complete(waiters, .discarded, latency: nil)]
        guard streams.foreground else {
            streams.fetchOnForeground = true
            return effects
        }
        return effects + requestFetch(.ask, at: time)
    }

    private mutating func settle(_ report: FetchReport, waiters: [FetchWaiter], at time: ProviderTime) -> [ProviderEffect] {
        let latency = report.latency
        switch report.verdict {
        case .cancelled:
            return [.complete(waiters, .discarded, latency: nil)]
        case .failed(let error):
            return failed(error, at: time) + [.complete(waiters, .failed(error), latency: latency)]
        case .rejected(let rejections):
            return rejected(rejections, at: time) + [.complete(waiters, .rejected(rejections.flatMap(\.violations)), latency: latency)]
        case .confirmed(let prepared):
            return keep(report.members) + (holdSafeMode(against: prepared, at: time) ?? succeeded(prepared, at: time))
                + [.complete(waiters, .unchanged, latency: latency)]
        case .fresh(let prepared, let etag, let unknownKeys, let advertised):
            let persist = ProviderEffect.persist(prepared.snapshot, etag: etag, streams: advertised, for: context)
            if let held = holdSafeMode(against: prepared, at: time) {
                return keep(report.members) + held + [persist, .complete(waiters, .unchanged, latency: latency)]
            }
            return keep(report.members) + leaveSafeMode(because: "the service sent values other than those the crashes happened under")
                + succeeded(prepared, activated: (prepared.snapshot.version, latency, unknownKeys), at: time)
                + [persist, .complete(waiters, .updated([]), latency: latency)]
        }
    }

    private func keep(_ members: [String: StoredFlags]?) -> [ProviderEffect] {
        members.map { [.keepMembers($0, of: context)] } ?? []
    }

    /// Serves `prepared` from the network, `READY`, and sets the kill hold from it. Values already
    /// expired (a signed document past its `exp`) are served `STALE`: a 304 or replay cannot renew them.
    private mutating func succeeded(
        _ prepared: PreparedSnapshot, activated: (version: String?, latency: Duration, unknownKeys: [String])? = nil,
        at time: ProviderTime
    ) -> [ProviderEffect] {
        let previous = served.status
        let expired = prepared.snapshot.isExpired(at: time.date)
        let old = served.serve(prepared, source: .network, reasonOverride: expired ? .stale : nil)
        let hold = holdKill(prepared.killed, at: time)
        var effects: [ProviderEffect] = [.publish(from: old, to: served)]
        if let activated {
            effects.append(.emit(.activated(version: activated.version, latencyMilliseconds: Int(activated.latency.milliseconds))))
            if !activated.unknownKeys.isEmpty { effects.append(.emit(.unknownKeys(Array(Set(activated.unknownKeys)).sorted()))) }
        }
        effects += relabel(expired ? .stale : .ready, at: time)
        if previous == .reconciling { effects.append(.emit(.contextChanged)) }
        return effects + releaseSettleWaiters() + hold
    }

    /// Holds the kill switch on the device (`on`) or releases it; written to the store when changed.
    private mutating func holdKill(_ on: Bool, at time: ProviderTime) -> [ProviderEffect] {
        guard served.held != on else { return [] }
        served.held = on
        return [.holdKill(on ? KillHold(since: time.date, context: context.fingerprint) : nil)]
    }

    /// Payloads broke the schema: keep the Last-Known-Good, but apply any kill switch (turning off is safe).
    private mutating func rejected(_ rejections: [PayloadGate.Rejection], at time: ProviderTime) -> [ProviderEffect] {
        var effects: [ProviderEffect] = rejections.filter { !$0.remembered }.map {
            .emit(.payloadRejected(violations: $0.violations, fingerprint: $0.fingerprint))
        }
        // Only the hold is stored: the signed values stay as they were for when it is released.
        var persist: [ProviderEffect] = []
        if rejections.contains(where: \.killSwitchOn) {
            let before = served
            persist += holdKill(true, at: time)
            effects.append(.publish(from: before, to: served))
        }
        let reason = Self.describe(rejections.flatMap(\.violations))
        return effects + fallBack(reason: reason, forcing: nil, at: time) + persist
    }

    /// One line for a rejection: how many rules broke and the first three.
    static func describe(_ violations: [FlagViolation]) -> String {
        let shown = violations.prefix(3).map(\.description).joined(separator: "; ")
        let more = violations.count > 3 ? "; and \(violations.count - 3) more" : ""
        return "payload rejected by the schema (\(violations.count) violation\(violations.count == 1 ? "" : "s")): \(shown)\(more)"
    }

    private mutating func failed(_ error: FetchError, at time: ProviderTime) -> [ProviderEffect] {
        failures += 1
        lastError = error
        if error.isFatal { fatal = true }
        if let retryAfter = error.retryAfter {
            retryNotBefore = time.elapsed + min(Duration.boundedWait(seconds: retryAfter), configuration.maximumRetryAfter)
        }
        var effects: [ProviderEffect] = [.emit(.fetchFailed(error))]
        if error.kind == .signatureRejected, let reason = error.signatureProblem {
            effects.append(.emit(.signatureRejected(reason: reason)))
        }
        if error.isFatal { effects.append(.emit(.error(.providerFatal, message: error.description))) }
        return effects + fallBack(reason: error.description, forcing: error.isFatal ? .fatal : nil, at: time)
    }

    /// Keeps serving the Last-Known-Good with the failure status: `forced`, else `STALE` past the TTL, else `ERROR`.
    private mutating func fallBack(reason: String, forcing forced: ProviderStatus?, at time: ProviderTime) -> [ProviderEffect] {
        let expired = served.source != .codeDefault && served.prepared.snapshot.isExpired(at: time.date)
        if served.source == .network || served.source == .fallback {
            served.source = .fallback
            served.reasonOverride = served.prepared.reasonOnDevice(at: time.date)
        }
        return relabel(forced ?? (expired ? .stale : .error), reason: reason, at: time) + releaseSettleWaiters()
    }

    /// Sets the status; a change to `READY`, `STALE` or `ERROR` (with `reason`) is announced. `FATAL` stays.
    mutating func relabel(_ wanted: ProviderStatus, reason: @autoclosure () -> String = "", at time: ProviderTime) -> [ProviderEffect] {
        let next = fatal ? .fatal : wanted
        let previous = served.status
        served.status = next
        guard previous != next else { return [] }
        switch next {
        case .ready: return [.emit(.ready)]
        // Unclamped: negative says the values were stamped after now (the clock was set back).
        case .stale: return [.emit(.stale(age: served.prepared.snapshot.signedAge(at: time.date)))]
        case .error: return [.emit(.error(.general, message: reason()))]
        default: return []
        }
    }

    /// When the served label expires on the provider's clock (1 ms after); nil if never, or in the background.
    func expiryDeadline(at time: ProviderTime) -> Duration? {
        guard streams.foreground else { return nil }
        let snapshot = served.prepared.snapshot
        let seconds: TimeInterval?
        if servesFallbackAfterFailure {
            seconds = snapshot.secondsUntilExpiry(at: time.date)
        } else if servesSignedNetworkValues, let expiresAt = snapshot.signature?.expiresAt, expiresAt > time.date {
            seconds = expiresAt.timeIntervalSince(time.date)
        } else {
            seconds = nil
        }
        guard let seconds else { return nil }
        // Bounded: the TTL and expiry come from outside, and `Duration` traps far out.
        return time.elapsed + Duration.boundedWait(seconds: seconds) + .milliseconds(1)
    }

    /// Relabels served values `STALE` (with the event) when their TTL or signed expiry has passed.
    mutating func reassessExpiry(at time: ProviderTime) -> [ProviderEffect] {
        if servesFallbackAfterFailure {
            guard served.prepared.snapshot.isExpired(at: time.date) else { return [] }
            return fallBack(reason: "the fallback values passed their TTL", forcing: nil, at: time)
        }
        let snapshot = served.prepared.snapshot
        guard servesSignedNetworkValues, let expiresAt = snapshot.signature?.expiresAt, time.date >= expiresAt else { return [] }
        served.reasonOverride = .stale
        return relabel(.stale, at: time) + releaseSettleWaiters()
    }

    /// Whether the fallback is served after a failure (`ERROR`): its label can expire without a fetch.
    private var servesFallbackAfterFailure: Bool { served.status == .error && served.source == .fallback }

    /// Whether signed network values are served `READY`: their `exp` can expire without a fetch.
    private var servesSignedNetworkValues: Bool {
        served.status == .ready && served.source == .network && served.prepared.snapshot.signature != nil
    }

    /// Drops the fetch in flight: its task is cancelled and its callers told `discarded`.
    private mutating func dropFlight() -> [ProviderEffect] {
        guard let flight else { return [] }
        self.flight = nil
        streams.deferred = nil
        var effects: [ProviderEffect] = []
        if let task = flight.task { effects.append(.cancel(task)) }
        effects.append(.answer(flight.waiters, .discarded))
        return effects
    }

    mutating func releaseSettleWaiters() -> [ProviderEffect] {
        guard shutDown || Self.isSettled(served.status), !settleWaiters.isEmpty else { return [] }
        defer { settleWaiters.removeAll() }
        return settleWaiters.keys.sorted().compactMap { settleWaiters[$0].map(ProviderEffect.resume) }
    }

    // MARK: Sleeping and waking

    /// Wakes the run loop to fetch: the request is recorded here, with the transition that woke it.
    mutating func wakeRunLoop() -> ProviderEffect {
        fetchRequested = true
        return .wake(runLoopSleep.wake())
    }

    /// Wakes the run loop to recompute its deadline (no fetch), and the crash-loop guard's wait.
    mutating func reschedule() -> ProviderEffect {
        .reschedule(runLoopSleep.wake() + healthSleep.wake())
    }

    private mutating func sleep(_ sleeper: Sleeper, id: Int, resume: @escaping Resume) -> [ProviderEffect] {
        // A sleep after shutdown would never be woken (the wake-up is spent): it returns at once.
        guard !shutDown else { return [.resume(resume)] }
        return self[keyPath: Self.sleep(of: sleeper)].register(id: id, resume: resume).map(ProviderEffect.resume)
    }

    private mutating func stopSleeping(_ sleeper: Sleeper, id: Int) -> [ProviderEffect] {
        self[keyPath: Self.sleep(of: sleeper)].stop(id: id).map(ProviderEffect.resume)
    }

    /// Where `sleeper`'s sleep is kept.
    private static func sleep(of sleeper: Sleeper) -> WritableKeyPath<ProviderState, Sleep> {
        switch sleeper {
        case .runLoop: return \.runLoopSleep
        case .healthTimer: return \.healthSleep
        }
    }

    // MARK: Scheduling

    /// When ``FeatureFlagProvider/run()`` tries next (nil: on a wake-up): jittered backoff or poll, after `Retry-After`.
    mutating func nextAttempt(after outcome: FetchOutcome, at now: Duration) -> Duration? {
        guard pathUp, streams.foreground else { return nil }
        var failed = failures > 0
        if case .failed = outcome { failed = true }
        let delay: Duration
        if failed {
            delay = configuration.backoff.delay(afterFailures: failures, using: &random)
        } else {
            let jitter = configuration.jitter
            delay = configuration.pollInterval * Double.random(in: (1 - jitter)...(1 + jitter), using: &random)
        }
        var next = now + delay
        if let notBefore = retryNotBefore, notBefore > next { next = notBefore }
        return next
    }
}
