import Foundation

extension FeatureFlagProvider {
    /// Fetches for the current context now (joining one in flight) and applies the result. Sends nothing
    /// without a path, during a `Retry-After`, after refused credentials or shutdown. A cancelled caller
    /// gets ``FetchOutcome/failed(_:)`` with ``FetchError/cancelled`` at once; the fetch goes on.
    @discardableResult
    public func refresh() async -> FetchOutcome { await refresh(until: nil) }

    /// One refresh for a background wake-up (`BGAppRefreshTask`, silent push): fetches now, whatever the
    /// schedule, and returns once the values are stored, or by `deadline` with a `timeout` failure (the
    /// fetch goes on). Opens no stream. Keep `deadline` below the system's grant (about 30 s).
    @discardableResult
    public func refreshInBackground(deadline: Duration = .seconds(20)) async -> FetchOutcome { await refresh(until: deadline) }

    /// A refresh answered with its outcome, `failed(.cancelled)` or `failed(.timeout)`, whichever comes first.
    private func refresh(until deadline: Duration?) async -> FetchOutcome {
        // The caller's answer and the deadline's timer: whoever answers first ends both.
        let pending = Locked<(answer: CheckedContinuation<FetchOutcome, Never>?, timer: Task<Void, Never>?)>((nil, nil))
        @Sendable func finish(_ outcome: FetchOutcome) {
            let (answer, timer) = pending.withLock { held in
                defer { held = (nil, nil) }
                return held
            }
            timer?.cancel()
            answer?.resume(returning: outcome)
        }
        let pathUp = pathIsUp(reported: reachability.isReachable)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<FetchOutcome, Never>) in
                pending.withLock { $0.answer = continuation }
                // Cancelled before the wait was registered: the handler found nothing to answer.
                if Task.isCancelled { finish(.failed(.cancelled)) }
                if let deadline {
                    let clock = self.clock
                    let end = clock.now() + deadline
                    let timer = Task { if (try? await clock.sleep(until: end)) != nil { finish(.failed(.timeout(deadline))) } }
                    // Already answered (cancelled): the timer has nothing to wait for.
                    let answered = pending.withLock { held in
                        if held.answer != nil { held.timer = timer }
                        return held.answer == nil
                    }
                    if answered { timer.cancel() }
                }
                transition(.refresh(pathUp: pathUp, waiter: { finish($0) }))
            }
        } onCancel: {
            finish(.failed(.cancelled))
        }
    }

    /// Whether a fetch may go out: also with no path when every endpoint is this machine (system monitor only).
    func pathIsUp(reported: Bool) -> Bool {
        reported || (SystemReachability.made(reachability) && fetcher.asksOnlyThisMachine(for: context))
    }

    /// One request of a fetch: a context through the chain (`service` nil) or one service of a set, and where its
    /// values are kept (the context's fingerprint, or a service's key).
    struct MemberRequest: Sendable {
        let context: EvaluationContext
        let service: Int?
        let key: String
    }

    /// The plan's requests: each member context, through each service of a set.
    func requests(of plan: FetchPlan) -> [MemberRequest] {
        let policy = fetcher.policy
        guard policy.servesSet else { return plan.members.map { MemberRequest(context: $0, service: nil, key: $0.fingerprint) } }
        return plan.members.flatMap { context in
            policy.endpoints.indices.map { MemberRequest(context: context, service: $0, key: policy.serviceKey(context.fingerprint, service: $0)) }
        }
    }

    /// What each request holds, by key: this session's answers for a merged identity or a set, else the stored ones
    /// (a set's only if they may stand in for their service).
    private func held(for requests: [MemberRequest], of plan: FetchPlan) -> [String: StoredFlags] {
        var held = requests.count > 1 ? store.members(of: plan.context.fingerprint) : [:]
        for request in requests where held[request.key] == nil {
            guard case .found(let stored)? = store.lookup(request.key) else { continue }
            if let service = request.service, fetcher.policy.heldServiceProblem(stored.snapshot, service: service, for: request.context) != nil {
                continue
            }
            held[request.key] = stored
        }
        return held
    }

    /// One fetch, in its own task: members fetched in parallel, judged, merged, reported; then its writes and answers.
    func performFetch(_ plan: FetchPlan) async {
        let started = clock.now()
        let requests = requests(of: plan)
        let held = held(for: requests, of: plan)
        let answers = await fetchMembers(requests, held: held, plan: plan)
        let report =
            fetcher.policy.servesSet
            ? servicesReport(answers, of: requests, held: held, for: plan, latency: clock.now() - started)
            : self.report(answers, for: plan, latency: clock.now() - started)
        // Counted before its answer is served, until its writes are on disk (`waitForWrites`).
        fetchWrites.enter()
        // At most one save and one kill hold; a hold goes to the file with its snapshot in one commit.
        var save: (flags: StoredFlags, context: EvaluationContext)?
        var hold: KillHold?? = nil
        var rest: [ProviderEffect] = []
        for effect in transition(.fetchEnded(report)) {
            switch effect {
            case .persist(let snapshot, let etag, let streams, let context):
                save = (StoredFlags(snapshot: snapshot, etag: etag, streams: keptStreams(streams)), context)
            case .holdKill(let change): hold = .some(change)
            default: rest.append(effect)
            }
        }
        let members = report.members ?? [:]
        let (saved, kill) = (save, hold)
        let body: @Sendable (LastKnownGoodStore) throws(FlagError) -> Void = { store throws(FlagError) in
            if let saved {
                try store.save(saved.flags, for: saved.context, killHold: kill, members: members)
            } else if let kill {
                try store.setKillHold(kill)
            }
        }
        // Queued before this task suspends; left on the I/O queue, so `waitForWrites` never waits on this task.
        await write(leaving: fetchWrites, saved == nil && kill == nil ? nil : body)
        var resumes: [@Sendable () -> Void] = []
        defer { for resume in resumes { resume() } }
        for effect in rest {
            switch effect {
            case .complete(let waiters, let outcome, let latency):
                if let latency {
                    let event = FlagEvent.fetchCompleted(latencyMilliseconds: Int(latency.milliseconds), outcome: outcome)
                    order.withLock { _ in publisher.emit(event) }
                }
                for waiter in waiters { waiter(outcome) }
            case .resume(let resume):
                resumes.append(resume)
            default:
                assertionFailure("only writes, completions and resumptions are deferred")
            }
        }
    }

    /// Fetches every request in parallel; answers in request order, with validation memory and whether the schema ran.
    func fetchMembers(
        _ requests: [MemberRequest], held: [String: StoredFlags], plan: FetchPlan
    ) async -> [(answer: FetchVerdict<StoredFlags>, memory: PayloadGate.Memory?, validated: Bool)] {
        let trigger = plan.trigger
        if requests.count == 1 {
            let request = requests[0]
            return [await fetchMember(request.context, held: held[request.key], memory: plan.memory[request.key], trigger: trigger)]
        }
        return await withTaskGroup(of: (Int, (FetchVerdict<StoredFlags>, PayloadGate.Memory?, Bool)).self) { group in
            for (index, request) in requests.enumerated() {
                let stored = held[request.key]
                let memory = plan.memory[request.key]
                group.addTask {
                    (index, await self.fetchMember(request.context, service: request.service, held: stored, memory: memory, trigger: trigger))
                }
            }
            var answers = [(answer: FetchVerdict<StoredFlags>, memory: PayloadGate.Memory?, validated: Bool)?](
                repeating: nil, count: requests.count)
            for await (index, answer) in group { answers[index] = answer }
            return answers.map { $0 ?? (.failed(.cancelled), nil, false) }
        }
    }

    /// One member: a conditional request, then the gate; a 304 to a rejected payload's tag stays a rejection.
    func fetchMember(
        _ member: EvaluationContext, service: Int? = nil, held: StoredFlags?, memory: PayloadGate.Memory?, trigger: FetchTrigger
    ) async -> (FetchVerdict<StoredFlags>, PayloadGate.Memory?, Bool) {
        // Held rules' tag wins; rules this build cannot read are refetched whole (a 304 would leave nothing).
        var rules: (any HeldRules)?
        let condition: EntityTag?
        if !trigger.conditional {
            condition = nil
        } else if let rejected = memory?.rejectedETag {
            condition = rejected
        } else if let local = fetcher.policy.localEvaluation, store.holdsLocalRules,
            service == nil || service == fetcher.policy.localEvaluationIndex
        {
            rules = store.localRules(readBy: local)
            condition = rules?.etag
        } else {
            condition = held?.etag
        }
        let result: FetchResult
        if case .streamed(let flags, let endpoint) = trigger, service.map({ endpoint == fetcher.scope(of: $0) }) ?? true {
            result = fetcher.streamed(flags, from: endpoint, for: member)
        } else if case .streamed = trigger, let held {
            return (.confirmed(held), memory, false)   // another service's stream: this one's values stand as held
        } else {
            result = await fetcher.fetch(
                member, service: service, ifNoneMatch: condition, hint: trigger.hint, signedNoEarlierThan: held?.snapshot.signature?.issuedAt)
        }
        switch result {
        case .failed(let error):
            return (.failed(error), memory, false)
        case .notModified:
            if let rejected = memory?.rejectedETag, rejected == condition, let standing = PayloadGate.standingRejection(memory) {
                return (.rejected([standing]), memory, false)
            }
            if let rules, let tag = rules.etag, tag == condition {
                let evaluated = rules.snapshot(for: member, at: wallClock())
                return (.confirmed(StoredFlags(snapshot: evaluated, etag: tag)), memory, false)
            }
            guard let held else {
                return (.failed(.decode(FlagError(.general, "\"not modified\" for values not held"))), memory, false)
            }
            // With trusted keys a 304 confirms only signed values: stored values failing the check
            // fail the fetch, and the retry (without their tag) brings the signed values.
            if let problem = fetcher.policy.storedSignatureProblem(held.snapshot, for: member) {
                return (.failed(.signatureRejected("\"not modified\" to stored values that fail the check: \(problem)")), memory, false)
            }
            return (.confirmed(held), memory, false)
        case .fetched(let snapshot, let etag, let streams):
            let judged = PayloadGate.judge(
                snapshot, etag: etag, schema: configuration.schema, killSwitchKey: base.killSwitchKey, memory: memory)
            switch judged.verdict {
            case .accepted(let unknownKeys):
                return (.fresh(StoredFlags(snapshot: snapshot, etag: etag), etag: etag, unknownKeys: unknownKeys, streams: streams), judged.memory, judged.validated)
            case .rejected(let rejection): return (.rejected([rejection]), judged.memory, judged.validated)
            }
        }
    }

    /// Combines member answers (cancellation, failure, rejection win; all 304s confirm), before the state's lock.
    func report(
        _ answers: [(answer: FetchVerdict<StoredFlags>, memory: PayloadGate.Memory?, validated: Bool)], for plan: FetchPlan,
        latency: Duration
    ) -> FetchReport {
        var memory: [String: PayloadGate.Memory?] = [:]
        for (member, answer) in zip(plan.members, answers) { memory[member.fingerprint] = answer.memory }
        let validations = answers.filter(\.validated).count
        func report(_ verdict: FetchVerdict<PreparedSnapshot>, members: [String: StoredFlags]? = nil) -> FetchReport {
            FetchReport(ticket: plan.ticket, verdict: verdict, memory: memory, validations: validations, members: members, latency: latency)
        }
        var stored: [StoredFlags] = []
        var rejections: [PayloadGate.Rejection] = []
        var unknownKeys: [String] = []
        var streams: [EventStreamLink] = []
        var fresh: (etag: EntityTag?, any: Bool) = (nil, false)
        for (answer, _, _) in answers {
            switch answer {
            case .cancelled: return report(.cancelled)
            case .failed(let error) where error == .cancelled || Task.isCancelled: return report(.cancelled)
            case .failed(let error): return report(.failed(error))
            case .rejected(let rejected): rejections += rejected
            case .confirmed(let held): stored.append(held)
            case .fresh(let values, let etag, let unknown, let advertised):
                fresh = (etag, true)
                for link in advertised where !streams.contains(link) { streams.append(link) }
                stored.append(values)
                unknownKeys.append(contentsOf: unknown)
            }
        }
        if !rejections.isEmpty { return report(.rejected(rejections)) }
        let now = wallClock()
        let snapshots = stored.map { fresh.any ? $0.snapshot : $0.snapshot.refetched(at: now) }
        // One member is served as it came; a merged identity's members are merged, and kept.
        let single = plan.members.count == 1
        let prepared = base.prepare(
            single
                ? snapshots[0]
                : configuration.merge.merge(Array(zip(plan.members, snapshots)), killSwitchKey: base.killSwitchKey, identity: plan.context))
        let kept = single ? nil : Dictionary(zip(plan.members.map(\.fingerprint), stored), uniquingKeysWith: { first, _ in first })
        return report(
            fresh.any ? .fresh(prepared, etag: single ? fresh.etag : nil, unknownKeys: unknownKeys, streams: streams) : .confirmed(prepared),
            members: kept)
    }

    /// What the fallback file keeps of advertised streams: all with ``Configuration/keepsStreamURLs``;
    /// else `[]` when none (or only an endpoint's own) were advertised, nil ("not known") otherwise.
    func keptStreams(_ streams: [EventStreamLink]?) -> [EventStreamLink]? {
        guard !configuration.keepsStreamURLs, let streams else { return streams }
        return streams.contains { $0.connection == nil } ? nil : []
    }

    /// Runs `body` on the I/O queue (queued before any suspension), then leaves `group`; reports its failure.
    func write(leaving group: DispatchGroup, _ body: (@Sendable (LastKnownGoodStore) throws(FlagError) -> Void)?) async {
        guard let body else {
            group.leave()   // nothing to write: no trip through the queue
            return
        }
        let store = self.store
        let failure: FlagError? = await withCheckedContinuation { continuation in
            io.async {
                var failure: FlagError?
                do throws(FlagError) { try body(store) } catch { failure = error }
                group.leave()
                continuation.resume(returning: failure)
            }
        }
        if let failure {
            order.withLock { _ in publisher.emit(.fallbackWriteFailed(reason: failure.message)) }
        }
    }
}
