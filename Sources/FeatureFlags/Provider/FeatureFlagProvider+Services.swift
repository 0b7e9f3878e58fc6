import Foundation

/// A set of services (``ServiceStrategy`` other than the chain): every context of the plan asked of every service at once,
/// each answer kept under its own key, the flags combined per flag.
extension FeatureFlagProvider {
    /// One request of a set: a context through one service, and where its values are kept.
    struct ServiceRequest: Sendable {
        let context: EvaluationContext
        let service: Int
        let key: String
    }

    /// The plan's requests: each member context through each service, in the app's order.
    func serviceRequests(of plan: FetchPlan) -> [ServiceRequest] {
        let policy = fetcher.policy
        return plan.members.flatMap { context in
            policy.endpoints.indices.map { index in
                ServiceRequest(context: context, service: index, key: policy.serviceKey(context.fingerprint, service: index))
            }
        }
    }

    /// Asks every service at once within the one budget and combines the answers; a service that fails or is rejected
    /// serves its own held values, and the others theirs from the network.
    func fetchServices(_ plan: FetchPlan, started: Duration) async -> FetchReport {
        let requests = serviceRequests(of: plan)
        var held = store.members(of: plan.context.fingerprint)
        for request in requests where held[request.key] == nil {
            // With trusted keys, held values stand in for a failed service only if a trusted key signed them.
            if case .found(let stored)? = store.lookup(request.key),
                fetcher.policy.heldServiceProblem(stored.snapshot, service: request.service, for: request.context) == nil
            {
                held[request.key] = stored
            }
        }
        let known = held
        let trigger = plan.trigger
        let answers = await withTaskGroup(of: (Int, (FetchVerdict<StoredFlags>, PayloadGate.Memory?, Bool)).self) { group in
            for (index, request) in requests.enumerated() {
                let memory = plan.memory[request.key]
                group.addTask {
                    (index, await self.fetchMember(request.context, service: request.service, held: known[request.key], memory: memory, trigger: trigger))
                }
            }
            var answers = [(FetchVerdict<StoredFlags>, PayloadGate.Memory?, Bool)?](repeating: nil, count: requests.count)
            for await (index, answer) in group { answers[index] = answer }
            return answers.map { $0 ?? (.failed(.cancelled), nil, false) }
        }
        return servicesReport(answers, of: requests, held: held, for: plan, latency: clock.now() - started)
    }

    /// The set's answers as one report: fresh if any service sent new values, failed or rejected only when none answered.
    func servicesReport(
        _ answers: [(FetchVerdict<StoredFlags>, PayloadGate.Memory?, Bool)], of requests: [ServiceRequest],
        held: [String: StoredFlags], for plan: FetchPlan, latency: Duration
    ) -> FetchReport {
        let names = fetcher.policy.serviceNames
        var memory: [String: PayloadGate.Memory?] = [:]
        var kept: [String: StoredFlags] = [:]
        var notes: [FlagEvent] = []
        var problems: [String] = []
        var firstError: FetchError?
        var rejections: [PayloadGate.Rejection] = []
        var killedBy: String?
        var unknownKeys: [String] = []
        var streams: [EventStreamLink] = []
        var fresh = false
        for (request, answer) in zip(requests, answers) {
            memory[request.key] = answer.1
            let name = names[request.service]
            switch answer.0 {
            case .cancelled:
                return FetchReport(ticket: plan.ticket, verdict: .cancelled, memory: memory, validations: 0, members: nil, latency: latency)
            case .failed(let error) where error == .cancelled || Task.isCancelled:
                return FetchReport(ticket: plan.ticket, verdict: .cancelled, memory: memory, validations: 0, members: nil, latency: latency)
            case .failed(let error):
                firstError = firstError ?? error
                problems.append("service \(name): \(error.description)")
                notes.append(.fetchFailed(error))
            case .rejected(let rejected):
                rejections += rejected
                if rejected.contains(where: \.killSwitchOn) { killedBy = killedBy ?? name }
                problems.append("service \(name): \(ProviderState.describe(rejected.flatMap(\.violations)))")
                notes += rejected.filter { !$0.remembered }.map { .payloadRejected(violations: $0.violations, fingerprint: $0.fingerprint) }
            case .confirmed(let values):
                kept[request.key] = values
            case .fresh(let values, _, let unknown, let advertised):
                fresh = true
                kept[request.key] = values
                unknownKeys += unknown
                for link in advertised where !streams.contains(link) { streams.append(link) }
            }
        }
        let validations = answers.filter(\.2).count
        func report(_ verdict: FetchVerdict<PreparedSnapshot>, notes: [FlagEvent] = [], partial: String? = nil) -> FetchReport {
            var report = FetchReport(
                ticket: plan.ticket, verdict: verdict, memory: memory, validations: validations, members: kept, latency: latency)
            report.notes = notes
            report.partial = partial
            return report
        }
        if kept.isEmpty {
            return rejections.isEmpty ? report(.failed(firstError ?? .cancelled)) : report(.rejected(rejections))
        }
        let now = wallClock()
        var combined = combinedValues(plan: plan, requests: requests, names: names, at: now, kept: kept, held: held, fresh: fresh)
        if let killedBy {
            var flags = combined.snapshot.flags
            flags[base.killSwitchKey] = FlagEntry(value: .bool(true), reason: .disabled, service: killedBy)
            combined.snapshot = FlagSnapshot(
                flags: flags, version: combined.snapshot.version, fetchedAt: combined.snapshot.fetchedAt, ttl: combined.snapshot.ttl,
                contextFingerprint: combined.snapshot.contextFingerprint)
        }
        let prepared = base.prepare(combined.snapshot)
        let partial = problems.isEmpty ? nil : problems.joined(separator: "; ") + " (their flags are served from their last good values)"
        let verdict: FetchVerdict<PreparedSnapshot> =
            fresh ? .fresh(prepared, etag: nil, unknownKeys: unknownKeys, streams: streams) : .confirmed(prepared)
        return report(verdict, notes: notes + combined.disagreements, partial: partial)
    }

    /// Each context's services combined by the strategy (a service without an answer by its held values), then the
    /// contexts merged (``ContextMerge``) when there are several.
    private func combinedValues(
        plan: FetchPlan, requests: [ServiceRequest], names: [String], at now: Date, kept: [String: StoredFlags],
        held: [String: StoredFlags], fresh: Bool
    ) -> (snapshot: FlagSnapshot, disagreements: [FlagEvent]) {
        var perContext: [(context: EvaluationContext, snapshot: FlagSnapshot)] = []
        var disagreements: [FlagEvent] = []
        for context in plan.members {
            let services = requests.filter { $0.context == context }.map { request in
                if let answered = kept[request.key] {
                    return ServiceValues(name: names[request.service], snapshot: fresh ? answered.snapshot : answered.snapshot.refetched(at: now))
                }
                return ServiceValues(name: names[request.service], snapshot: held[request.key]?.snapshot, held: true)
            }
            let result = fetcher.configuration.strategy.combine(
                services, killSwitchKey: base.killSwitchKey, fingerprint: context.fingerprint)
            perContext.append((context, result.snapshot))
            disagreements += result.disagreements
        }
        guard perContext.count > 1 else { return (perContext[0].snapshot, disagreements) }
        return (configuration.merge.merge(perContext, killSwitchKey: base.killSwitchKey, identity: plan.context), disagreements)
    }
}
