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
        var names: [String] = []
        var seen = Set<String>()
        for service in held {
            for name in service.snapshot!.flags.keys.sorted() where seen.insert(name).inserted { names.append(name) }
        }
        var flags: [String: FlagEntry] = [:]
        var disagreements: [FlagEvent] = []
        for name in names {
            let answers = held.map { service in
                (service: service.name, entry: service.snapshot!.flags[name].map { service.held ? $0.cached : $0 })
            }
            if name == killSwitchKey {
                // The safe reading: any service that says "kill" kills.
                let on = answers.first { $0.entry?.value?.boolValue == true } ?? answers.first { $0.entry != nil }
                if let on, let entry = on.entry { flags[name] = entry.from(on.service) }
                continue
            }
            switch self {
            case .chain, .firstMatch:
                // A missing flag or a `FLAG_NOT_FOUND` entry moves on; any other answer, error or not, is the answer.
                if let found = answers.first(where: { $0.entry != nil && $0.entry?.errorCode != .flagNotFound }) {
                    flags[name] = found.entry!.from(found.service)
                }
            case .firstSuccessful:
                if let found = answers.first(where: { $0.entry?.value != nil && $0.entry?.errorCode == nil }) {
                    flags[name] = found.entry!.from(found.service)
                } else if let failed = answers.first(where: { $0.entry != nil }) {
                    flags[name] = failed.entry!.from(failed.service)
                }
            case .comparison(let answering):
                if let failed = answers.first(where: { $0.entry?.value == nil || $0.entry?.errorCode != nil }) {
                    flags[name] = failed.entry?.from(failed.service)
                        ?? FlagEntry(value: nil, reason: .error, errorCode: .flagNotFound, service: failed.service)
                    continue
                }
                let first = answers[0]
                if answers.allSatisfy({ $0.entry!.value == first.entry!.value }) {
                    flags[name] = first.entry!.from(first.service)
                    continue
                }
                let designated = services.indices.contains(answering) ? services[answering].name : first.service
                let chosen = answers.first { $0.service == designated } ?? first
                flags[name] = chosen.entry!.from(chosen.service)
                var values: [String: FlagValue] = [:]
                for answer in answers { values[answer.service] = answer.entry!.value }
                disagreements.append(.servicesDisagree(flag: name, fingerprint: fingerprint, values: values))
            }
        }
        let snapshots = held.map { $0.snapshot! }
        var seenVersions = Set<String>()
        let versions = snapshots.compactMap(\.version).filter { seenVersions.insert($0).inserted }
        let combined = FlagSnapshot(
            flags: flags, version: versions.isEmpty ? nil : versions.joined(separator: "+"),
            fetchedAt: snapshots.map(\.fetchedAt).min() ?? Date(), ttl: snapshots.compactMap(\.ttl).min(),
            contextFingerprint: fingerprint)
        return (combined, disagreements)
    }
}

extension FlagEntry {
    /// The same entry read from held values: reason `CACHED`.
    var cached: FlagEntry {
        FlagEntry(value: value, variant: variant, reason: value == nil ? reason : .cached, errorCode: errorCode, metadata: metadata, service: service)
    }

    /// The same entry, attributed to `service`.
    func from(_ service: String) -> FlagEntry {
        FlagEntry(value: value, variant: variant, reason: reason, errorCode: errorCode, metadata: metadata, service: service)
    }
}
