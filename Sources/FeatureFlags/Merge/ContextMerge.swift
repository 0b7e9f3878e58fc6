import Foundation

/// How a provider identified with several contexts at once (``FeatureFlagProvider/identify(merging:)``)
/// ranks them and merges their flags into the one snapshot it serves.
///
/// ```swift
/// var merge = ContextMerge(tierAttribute: "plan_tier", tierOrder: ["business", "personal"])
/// merge.policies = ["plan_feature_list": .union, "plan_data_limit": .maximum,
///                   "plan_priority_support": .any]          // everything else: top tier
/// ```
///
/// The kill switch is always merged with ``MergePolicy/any``: a kill in any context applies.
public struct ContextMerge: Sendable {
    /// Per-flag policies; flags not listed use ``defaultPolicy``.
    public var policies: [String: MergePolicy]
    /// The policy for flags without one of their own. Default ``MergePolicy/topTier``.
    public var defaultPolicy: MergePolicy
    /// The attribute that names a context's tier, e.g. `plan_tier`; nil ranks contexts in the
    /// order given to `identify(merging:)`.
    public var tierAttribute: String?
    /// Tier values, highest first, e.g. `["business", "personal"]`. Contexts whose tier is
    /// missing or unlisted rank below every listed tier, in the order given.
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
        // A few contexts: compared in turn, not hashed into a `Set` (whose type the runtime would
        // build at the first merged identify, searching every conformance for `Hashable`).
        var unique: [EvaluationContext] = []
        for context in contexts where !unique.contains(context) { unique.append(context) }
        guard let tierAttribute else { return unique }
        func rank(_ context: EvaluationContext) -> Int {
            context.string(tierAttribute).flatMap { tierOrder.firstIndex(of: $0) } ?? tierOrder.count
        }
        // Indices sorted, not (offset, context) pairs: one sort of `Int`s serves the library.
        let ranks = unique.map(rank)
        return unique.indices.sorted { (ranks[$0], $0) < (ranks[$1], $1) }.map { unique[$0] }
    }

    /// The context a merged identity is known by: its fallback entry and snapshot carry this
    /// context's fingerprint. Its only attribute, `merged_contexts`, lists the members (ranked)
    /// in their flat form; the targeting key is the top-ranked member's.
    public static func identity(of ranked: [EvaluationContext]) -> EvaluationContext {
        EvaluationContext(
            targetingKey: ranked.first?.targetingKey,
            attributes: ["merged_contexts": .list(ranked.map(\.flagValue))])
    }

    /// One flag across the members: the highest-ranked entry holding the merged value, or a
    /// new entry when the value is computed.
    private func mergedEntry(
        _ name: String, _ members: [(context: EvaluationContext, snapshot: FlagSnapshot)], policy: MergePolicy
    ) -> FlagEntry? {
        if case .topTier = policy {
            // The common case, without building candidates.
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

    /// One snapshot from the members' snapshots (highest tier first), for `identity`.
    /// Version: the members' distinct versions joined with `+`; fetched at the oldest member's time;
    /// TTL the shortest (each member keeps its own entity tag). A merged flag keeps the
    /// variant and reason of the highest-ranked entry holding the merged value, else reason
    /// `TARGETING_MATCH` and variant `merged`.
    ///
    /// A member whose missing flags are off (``FlagSnapshot/missingFlagsAreOff``) takes part
    /// with `false` for each `Bool` flag another member has and it lacks: its service turned
    /// the flag off for that context. The merged snapshot's missing flags are off when every
    /// member's are.
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
        var seenVersions = Set<String>()
        let versions = members.compactMap(\.snapshot.version).filter { seenVersions.insert($0).inserted }
        var merged = FlagSnapshot(
            flags: flags, version: versions.isEmpty ? nil : versions.joined(separator: "+"),
            fetchedAt: members.map(\.snapshot.fetchedAt).min() ?? Date(), ttl: members.compactMap(\.snapshot.ttl).min(),
            contextFingerprint: identity.fingerprint)
        merged.missingFlagsAreOff = !members.isEmpty && members.allSatisfy(\.snapshot.missingFlagsAreOff)
        // Members whose answers were signed: the merge is current only while every member is
        // (the earliest expiry), signed when the last of them was. It holds no signed answer of
        // its own (no envelope), so it is never checked as one: with trusted keys it is made
        // again from its members (Docs/Security.md).
        let stamps = given.compactMap(\.snapshot.signature)
        if let first = stamps.first, stamps.count == given.count {
            merged.signature = SignatureStamp(
                keyID: first.keyID, issuedAt: stamps.compactMap(\.issuedAt).max(), expiresAt: stamps.compactMap(\.expiresAt).min())
        }
        return merged
    }

    /// `members` with `false` (reason `DISABLED`) filled in, for each member whose missing
    /// flags are off, for the `Bool` flags other members have and it lacks.
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
