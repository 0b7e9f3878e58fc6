import Foundation

extension FeatureFlagProvider {
    /// What one member context's request came to.
    enum MemberAnswer: Sendable {
        /// A new payload the gate accepted, with the flags the schema does not know.
        case fresh(FlagSnapshot, unknownKeys: [String])
        /// 304: the member's values are unchanged (the snapshot they are in).
        case unchanged(FlagSnapshot)
        /// The payload broke the schema (now or, for a 304, before).
        case rejected(PayloadGate.Rejection)
        /// The request failed.
        case failed(FetchError)
    }

    /// Fetches every member at once (each within the online client's deadline, so a merged
    /// fetch takes as long as the slowest member, not the sum); answers in member order.
    func fetchMembers(_ members: [EvaluationContext]) async -> [MemberAnswer] {
        if members.count == 1 { return [await fetchMember(members[0], merged: false)] }
        return await withTaskGroup(of: (Int, MemberAnswer).self) { group in
            for (index, member) in members.enumerated() {
                group.addTask { (index, await self.fetchMember(member, merged: true)) }
            }
            var answers = [MemberAnswer?](repeating: nil, count: members.count)
            for await (index, answer) in group { answers[index] = answer }
            return answers.map { $0 ?? .failed(.cancelled) }
        }
    }

    /// One member: the request, then the gate. A 304 after a rejection is still a rejection
    /// (the service kept the payload the gate refused); a 304 for values not held is asked
    /// again in full, once — a service that answers 304 to an unconditional request is broken.
    func fetchMember(_ member: EvaluationContext, merged: Bool) async -> MemberAnswer {
        var retried = false
        while true {
            let result: FlagFetchResult
            do {
                result = try await online.fetch(for: member)
            } catch {
                return .failed(error)
            }
            switch result {
            case .snapshot(let snapshot):
                switch gate.check(snapshot, context: member.fingerprint) {
                case .accepted(let unknownKeys): return .fresh(snapshot, unknownKeys: unknownKeys)
                case .rejected(let rejection): return .rejected(rejection)
                }
            case .notModified:
                if let rejection = gate.standingRejection(context: member.fingerprint) { return .rejected(rejection) }
                if let previous = heldSnapshot(of: member, merged: merged) { return .unchanged(previous) }
                online.setETag(nil, for: member)
                if retried {
                    return .failed(.decode(FlagEndpointError(.general, "304 Not Modified to a request without If-None-Match")))
                }
                retried = true
            }
        }
    }

    /// The values a 304 for `member` confirms: the served snapshot for a single context, the
    /// member's last accepted snapshot for a merged identity.
    private func heldSnapshot(of member: EvaluationContext, merged: Bool) -> FlagSnapshot? {
        if merged { return state.withLock { $0.memberSnapshots[member.fingerprint] } }
        let served = serving.snapshot
        return served.contextFingerprint == member.fingerprint ? served : nil
    }
}

extension FlagSnapshot {
    /// These values with the kill switch on: what a rejected payload that asks for the kill
    /// switch leaves behind. Keeps the version, fetch time and entity tag of the values it
    /// protects (an empty snapshot becomes a fallback snapshot stamped `now`).
    func withKillSwitch(_ key: String, for context: EvaluationContext, at now: Date) -> FlagSnapshot {
        var flags = self.flags
        flags[key] = FlagEntry(value: .bool(true), reason: .disabled)
        let empty = origin == .codeDefault
        return FlagSnapshot(
            flags: flags, version: version, fetchedAt: empty ? now : fetchedAt, ttl: ttl, etag: etag,
            origin: empty ? .fallback : origin, contextFingerprint: context.fingerprint)
    }
}
