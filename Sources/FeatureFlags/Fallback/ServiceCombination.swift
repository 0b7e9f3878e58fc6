import Foundation

/// One service's part in a combination: its name and the values it holds (nil: none yet, so it is skipped).
struct ServiceValues: Sendable {
    let name: String
    let snapshot: FlagSnapshot?
    /// Whether the values are the service's held ones standing in for an answer that failed: its flags read `CACHED`.
    var held = false
}

extension ServiceStrategy {
    /// One snapshot for `fingerprint` from `services` (in the app's order), each flag chosen by the strategy and
    /// attributed to its service; a kill from any service kills. Disagreements come back as events.
    func combine(
        _ services: [ServiceValues], killSwitchKey: String, fingerprint: String
    ) -> (snapshot: FlagSnapshot, disagreements: [FlagEvent]) {
        let held = services.filter { $0.snapshot != nil }
        let snapshots = held.map { $0.snapshot! }
        var names: [String] = []
        var seen = Set<String>()
        for snapshot in snapshots {
            for name in snapshot.flags.keys.sorted() where seen.insert(name).inserted { names.append(name) }
        }
        var flags: [String: FlagEntry] = [:]
        var disagreements: [FlagEvent] = []
        for name in names {
            let entries = held.indices.map { index in snapshots[index].flags[name].map { held[index].held ? $0.cached : $0 } }
            var chosen: Int?
            if name == killSwitchKey {
                // The safe reading: any service that says "kill" kills.
                chosen = entries.firstIndex { $0.map(Self.kills) == true } ?? entries.firstIndex { $0 != nil }
            } else {
                switch self {
                case .chain, .firstMatch:
                    // A missing flag or a `FLAG_NOT_FOUND` entry moves on; any other answer, error or not, is the answer.
                    chosen = entries.firstIndex { $0 != nil && $0?.errorCode != .flagNotFound }
                case .firstSuccessful:
                    chosen = entries.firstIndex { $0?.value != nil && $0?.errorCode == nil } ?? entries.firstIndex { $0 != nil }
                case .comparison(let answering):
                    if let failed = entries.firstIndex(where: { $0?.value == nil || $0?.errorCode != nil }) {
                        flags[name] = (entries[failed] ?? FlagEntry(value: nil, reason: .error, errorCode: .flagNotFound)).from(held[failed].name)
                        continue
                    }
                    chosen = 0
                    if entries.contains(where: { $0?.value != entries[0]?.value }) {
                        let designated = services.indices.contains(answering) ? services[answering].name : held[0].name
                        chosen = held.firstIndex { $0.name == designated } ?? 0
                        var values: [String: FlagValue] = [:]
                        for index in held.indices { values[held[index].name] = entries[index]?.value }
                        disagreements.append(.servicesDisagree(flag: name, fingerprint: fingerprint, values: values))
                    }
                }
            }
            if let chosen, let entry = entries[chosen] { flags[name] = entry.from(held[chosen].name) }
        }
        return (FlagSnapshot.joining(flags, of: snapshots, fingerprint: fingerprint), disagreements)
    }

    /// Whether an entry turns the kill switch on: `true`, or the text `"true"` (any case) of a service that sends
    /// every value as text, as ``FlagSnapshot/isKillSwitchOn(key:)`` reads it.
    static func kills(_ entry: FlagEntry) -> Bool {
        switch entry.value {
        case .bool(true)?: true
        case .string(let text)?: text.lowercased() == "true"
        default: false
        }
    }
}

extension DevicePolicy {
    /// `identity`'s values from a set: each member context's services (`values`: a context and a service's index)
    /// combined by the strategy, then the members merged (``ContextMerge``) when there are several.
    func combinedSet(
        _ identity: EvaluationContext, members: [EvaluationContext], merge: ContextMerge, killSwitchKey: String,
        values: (EvaluationContext, Int) -> ServiceValues
    ) -> (snapshot: FlagSnapshot, disagreements: [FlagEvent]) {
        var perContext: [(context: EvaluationContext, snapshot: FlagSnapshot)] = []
        var disagreements: [FlagEvent] = []
        for member in members {
            let combined = strategy.combine(
                endpoints.indices.map { values(member, $0) }, killSwitchKey: killSwitchKey, fingerprint: member.fingerprint)
            perContext.append((member, combined.snapshot))
            disagreements += combined.disagreements
        }
        let snapshot = perContext.count > 1
            ? merge.merge(perContext, killSwitchKey: killSwitchKey, identity: identity) : perContext[0].snapshot
        return (snapshot, disagreements)
    }
}

extension FlagEntry {
    /// The same entry read from held values: reason `CACHED`.
    var cached: FlagEntry {
        FlagEntry(value: value, variant: variant, reason: value == nil ? reason : .cached, errorCode: errorCode, metadata: metadata, service: service)
    }

    /// The same entry, attributed to `service`; an error's value is dropped (OpenFeature: only nominal results count).
    func from(_ service: String) -> FlagEntry {
        FlagEntry(value: errorCode == nil ? value : nil, variant: variant, reason: reason, errorCode: errorCode, metadata: metadata, service: service)
    }
}
