import Foundation

/// A set of services (``ServiceStrategy`` other than the chain): the answers of every context's services, each kept under
/// its own key, combined per flag.
extension FeatureFlagProvider {
    /// The set's answers as one report: fresh if any service sent new values, failed or rejected only when none answered.
    func servicesReport(
        _ answers: [(FetchVerdict<StoredFlags>, PayloadGate.Memory?, Bool)], of requests: [MemberRequest],
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
        var freshKeys = Set<String>()
        let cancelled = FetchReport(ticket: plan.ticket, verdict: .cancelled, memory: [:], validations: 0, members: nil, latency: latency)
        if Task.isCancelled { return cancelled }
        for (request, answer) in zip(requests, answers) {
            memory[request.key] = answer.1
            let name = names[request.service ?? 0]
            switch answer.0 {
            case .cancelled, .failed(.cancelled):
                return cancelled
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
                freshKeys.insert(request.key)
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
        var combined = fetcher.policy.combinedSet(
            plan.context, members: plan.members, merge: configuration.merge, killSwitchKey: base.killSwitchKey
        ) { context, service in
            let key = fetcher.policy.serviceKey(context.fingerprint, service: service)
            if let answered = kept[key] {
                // A 304 renews what it confirms: its age starts again, as a chain's does.
                return ServiceValues(name: names[service], snapshot: freshKeys.contains(key) ? answered.snapshot : answered.snapshot.refetched(at: now))
            }
            return ServiceValues(name: names[service], snapshot: held[key]?.snapshot, held: true)
        }
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
            freshKeys.isEmpty ? .confirmed(prepared) : .fresh(prepared, etag: nil, unknownKeys: unknownKeys, streams: streams)
        return report(verdict, notes: notes + combined.disagreements, partial: partial)
    }
}
