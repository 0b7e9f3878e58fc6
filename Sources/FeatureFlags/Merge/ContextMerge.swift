import Foundation

/// How a provider identified with several contexts (``FeatureFlagProvider/identify(merging:)``) ranks them and merges
/// their flags into one snapshot. The kill switch always merges with ``MergePolicy/any``.
public struct ContextMerge: Sendable {
    /// Per-flag policies; flags not listed use ``defaultPolicy``.
    public var policies: [String: MergePolicy]
    /// The policy for flags without one of their own. Default ``MergePolicy/topTier``.
    public var defaultPolicy: MergePolicy
    /// The attribute naming a context's tier, e.g. `plan_tier`; nil keeps the order given.
    public var tierAttribute: String?
    /// Tier values, highest first; missing or unlisted tiers rank below all, in the order given.
    public var tierOrder: [String]

    /// A merge configuration.
    public init(
        policies: [String: MergePolicy] = [:], defaultPolicy: MergePolicy = .topTier, tierAttribute: String? = nil,
        tierOrder: [String] = []
    ) {
        self.policies = policies
        self.defaultPolicy = defaultPolicy
        self.tierAttribute = tierAttribute
        self.tierOrder = tierOrder
    }

    /// `contexts` without duplicates, highest tier first (stable for equal tiers).
    public func ranked(_ contexts: [EvaluationContext]) -> [EvaluationContext] {
        // Compared in turn, not hashed: a `Set` costs a runtime conformance search at first use.
        var unique: [EvaluationContext] = []
        for context in contexts where !unique.contains(context) { unique.append(context) }
        guard let tierAttribute else { return unique }
        func rank(_ context: EvaluationContext) -> Int {
            context.string(tierAttribute).flatMap { tierOrder.firstIndex(of: $0) } ?? tierOrder.count
        }
        let ranks = unique.map(rank)
        return unique.indices.sorted { (ranks[$0], $0) < (ranks[$1], $1) }.map { unique[$0] }
    }

    /// The context a merged identity is stored under: `merged_contexts` lists the ranked members; top member's targeting key.
    public static func identity(of ranked: [EvaluationContext]) -> EvaluationContext {
        EvaluationContext(
            targetingKey: ranked.first?.targetingKey,
            attributes: ["merged_contexts": .list(ranked.map(\.flagValue))])
    }

    /// One flag across the members: the highest-ranked entry holding the merged value, else a new one.
    private func mergedEntry(
        _ name: String, _ members: [(context: EvaluationContext, snapshot: FlagSnapshot)], policy: MergePolicy
    ) -> FlagEntry? {
        if case .topTier = policy {
            var first: FlagEntry?
            for member in members {
                guard let entry = member.snapshot.flags[name] else { continue }
                if entry.value != nil { return entry }
                if first == nil { first = entry }
            }
            return first
        }
        var candidates: [(context: EvaluationContext, value: FlagValue)] = []
        var topEntry: FlagEntry?
        for member in members {
            guard let entry = member.snapshot.flags[name] else { continue }
            if topEntry == nil { topEntry = entry }
            if let value = entry.value { candidates.append((context: member.context, value: value)) }
        }
        guard !candidates.isEmpty else { return topEntry }
        let value = policy.merge(candidates)
        for member in members {
            if let entry = member.snapshot.flags[name], entry.value == value { return entry }
        }
        return FlagEntry(value: value, variant: "merged", reason: .targetingMatch)
    }

    /// One snapshot for `identity` (members highest tier first): versions joined with `+`, oldest fetch, shortest TTL.
    /// Members whose missing flags are off (``FlagSnapshot/missingFlagsAreOff``) contribute `false` for `Bool` flags they lack.
    public func merge(
        _ given: [(context: EvaluationContext, snapshot: FlagSnapshot)], killSwitchKey: String,
        identity: EvaluationContext
    ) -> FlagSnapshot {
        let members = Self.offWhereMissing(given)
        var flags: [String: FlagEntry] = [:]
        flags.reserveCapacity(members.first?.snapshot.flags.count ?? 0)
        for member in members {
            for name in member.snapshot.flags.keys where flags[name] == nil {
                flags[name] = mergedEntry(name, members, policy: name == killSwitchKey ? .any : policies[name] ?? defaultPolicy)
            }
        }
        var merged = FlagSnapshot.joining(flags, of: members.map(\.snapshot), fingerprint: identity.fingerprint)
        merged.missingFlagsAreOff = !members.isEmpty && members.allSatisfy(\.snapshot.missingFlagsAreOff)
        // Signed only if every member was (earliest expiry); it has no envelope: trusted keys rebuild it (Docs/Security.md).
        let stamps = given.compactMap(\.snapshot.signature)
        if let first = stamps.first, stamps.count == given.count {
            merged.signature = SignatureStamp(
                keyID: first.keyID, issuedAt: stamps.compactMap(\.issuedAt).max(), expiresAt: stamps.compactMap(\.expiresAt).min())
        }
        return merged
    }

    /// `members` with `false` (`DISABLED`) filled in for `Bool` flags a missing-flags-off member lacks.
    private static func offWhereMissing(
        _ members: [(context: EvaluationContext, snapshot: FlagSnapshot)]
    ) -> [(context: EvaluationContext, snapshot: FlagSnapshot)] {
        guard members.contains(where: \.snapshot.missingFlagsAreOff) else { return members }
        var booleans = Set<String>()
        for member in members {
            for (name, entry) in member.snapshot.flags where entry.value?.boolValue != nil { booleans.insert(name) }
        }
        return members.map { member in
            guard member.snapshot.missingFlagsAreOff else { return member }
            var flags = member.snapshot.flags
            for name in booleans where flags[name] == nil { flags[name] = FlagEntry(value: .bool(false), reason: .disabled) }
            var filled = FlagSnapshot(
                flags: flags, version: member.snapshot.version, fetchedAt: member.snapshot.fetchedAt, ttl: member.snapshot.ttl,
                contextFingerprint: member.snapshot.contextFingerprint)
            filled.missingFlagsAreOff = true
            return (context: member.context, snapshot: filled)
        }
    }
}

extension FlagSnapshot {
    /// `flags` chosen from `snapshots`: their versions joined with `+` (each once), the oldest fetch, the shortest TTL.
    static func joining(_ flags: [String: FlagEntry], of snapshots: [FlagSnapshot], fingerprint: String) -> FlagSnapshot {
        var seen = Set<String>()
        let versions = snapshots.compactMap(\.version).filter { seen.insert($0).inserted }
        return FlagSnapshot(
            flags: flags, version: versions.isEmpty ? nil : versions.joined(separator: "+"),
            fetchedAt: snapshots.map(\.fetchedAt).min() ?? Date(), ttl: snapshots.compactMap(\.ttl).min(), contextFingerprint: fingerprint)
    }
}
