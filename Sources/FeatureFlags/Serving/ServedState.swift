package import Foundation

/// What lies beneath every snapshot a client serves, fixed for the client's life: the bundled
/// defaults and the kill-switch key.
package struct ServingBase: Sendable {
    /// The bundled defaults, served for flags the snapshot lacks.
    package let defaults: [String: FlagEntry]
    /// The flag whose `true` forces every read to its key's default.
    package let killSwitchKey: String

    /// A base of `defaults` and `killSwitchKey`.
    package init(defaults: [String: FlagEntry] = [:], killSwitchKey: String) {
        self.defaults = defaults
        self.killSwitchKey = killSwitchKey
    }

    /// `snapshot` ready to serve: what plain reads return, precomputed (the defaults overlaid
    /// by the snapshot's values; an entry without a value removes the name), and whether the
    /// kill switch is on. Built before taking any lock: the lock only swaps it in. Over a
    /// snapshot whose missing flags are off, `Bool` defaults are left out: the service turned
    /// those flags off by leaving them out.
    package func prepare(_ snapshot: FlagSnapshot) -> PreparedSnapshot {
        let under = snapshot.missingFlagsAreOff ? defaults.filter { $0.value.value?.boolValue == nil } : defaults
        return PreparedSnapshot(
            snapshot: snapshot, table: snapshot.storage.table(over: under),
            killed: snapshot.isKillSwitchOn(key: killSwitchKey))
    }
}

/// A snapshot with its read-ready values. Immutable.
package struct PreparedSnapshot: Sendable {
    /// The snapshot.
    package let snapshot: FlagSnapshot
    /// The snapshot's entries over the bundled defaults, as reads look them up: what a plain
    /// read of each name returns (before the kill switch), and what details report.
    package let table: FlagTable
    /// Whether the snapshot turns the kill switch on.
    package let killed: Bool

    /// No flags: code defaults (and bundled defaults, once prepared by a base).
    package static let empty = PreparedSnapshot(snapshot: .empty, table: .empty, killed: false)

    /// The same values, killed when `held` (the kill switch held on the device) even if the
    /// snapshot itself does not say so.
    package func holding(_ held: Bool) -> PreparedSnapshot {
        held && !killed ? PreparedSnapshot(snapshot: snapshot, table: table, killed: true) : self
    }

    /// The reason these values read with at `now` when served from the device rather than a
    /// fresh answer: `STALE` past their TTL; else `CACHED` for stored values, and nil for values
    /// evaluated on the device from held rules, which keep the reasons the evaluation gave
    /// (`TARGETING_MATCH`, `STATIC`…) — they were worked out for this context, not recalled.
    package func reasonOnDevice(at now: Date) -> FlagReason? {
        if snapshot.isExpired(at: now) { return .stale }
        return snapshot.heldRules == nil ? .cached : nil
    }
}

/// What a client serves at one instant — values, where they come from, the status — replaced
/// as one value under the client's lock, so a reader can never see half of a change.
package struct ServedState: Sendable {
    /// The snapshot and its read-ready values.
    package var prepared: PreparedSnapshot { didSet { revision &+= 1 } }
    /// Where the snapshot's values come from: `network`, `fallback`, `override`, or
    /// `code_default` for the empty snapshot.
    package var source: FlagSource { didSet { revision &+= 1 } }
    /// The status.
    package var status: ProviderStatus { didSet { revision &+= 1 } }
    /// Set while serving cached or stale data: every snapshot value reports this reason.
    package var reasonOverride: FlagReason? { didSet { revision &+= 1 } }
    /// The kill switch held on the device (``KillHold``): reads are killed even when the
    /// snapshot served does not say so.
    package var held: Bool { didSet { revision &+= 1 } }
    /// The overrides a tester set (``FlagOverrides``), over the snapshot and beneath the kill
    /// switch; nil when there are none (or the provider is in safe mode).
    var overrides: OverrideLayer? { didSet { revision &+= 1 } }
    /// The context the values are for (hooks and exposure events name it).
    package var context: EvaluationContext { didSet { revision &+= 1 } }
    /// The fingerprint of the context the values are for when the client was not told the
    /// context itself (a fallback client serving its store's most recent context); nil otherwise.
    package var unnamedContext: String? { didSet { revision &+= 1 } }
    /// Counts the changes of everything above: a ``ServingCell`` publishes the state to its
    /// readers when this moves.
    package private(set) var revision: UInt64 = 0
    /// Flags whose unknown list members were reported since the values last changed.
    package var unknownReported: Set<String> = []

    /// Serving `prepared` from `source` with `status`.
    package init(
        _ prepared: PreparedSnapshot, source: FlagSource, status: ProviderStatus, reasonOverride: FlagReason? = nil,
        held: Bool = false, context: EvaluationContext = .anonymous
    ) {
        self.context = context
        self.prepared = prepared
        self.source = source
        self.status = status
        self.reasonOverride = reasonOverride
        self.held = held
    }

    /// Whether reads are killed now: by the snapshot or by the hold.
    package var killed: Bool { prepared.killed || held }

    /// What readers get: the snapshot's values, killed by the hold too, and the overrides.
    var effective: ServedValues { ServedValues(prepared: prepared.holding(held), overrides: overrides) }

    /// Serves `next` from `source` with the given reason; the status is kept unless given.
    /// Returns what readers got before, for the change notification.
    @discardableResult
    mutating func serve(
        _ next: PreparedSnapshot, source: FlagSource, status: ProviderStatus? = nil, reasonOverride: FlagReason?
    ) -> ServedValues {
        let old = effective
        prepared = next
        self.source = source
        if let status { self.status = status }
        self.reasonOverride = reasonOverride
        return old
    }

    /// The status and labels.
    package var labels: ServedLabels {
        ServedLabels(status: status, source: source, reasonOverride: reasonOverride, killed: killed)
    }

    /// The non-generic half of a read: the flag's value, or nil when the kill switch is on
    /// (and `name` is not the kill-switch key), the flag is missing or it carries no value.
    /// While the kill is held, the kill-switch key itself reads `true`.
    @inline(__always)
    package func lookup(_ name: String, hash: Int, killSwitchKey: String) -> FlagValue? {
        if prepared.killed || held { return killedLookup(name, killSwitchKey: killSwitchKey, hash: hash) }
        if let overrides, let forced = overrides.value(name, hash: hash) { return forced }
        guard let slot = prepared.table.slot(name, hash: hash) else { return missingValue() }
        return slot.pointee.value
    }

    /// What a read of a flag the table lacks starts from: `false` where the snapshot's missing
    /// flags are off (it converts to nothing but `Bool`, so reads of other types take their
    /// default), else nothing. Plain and explained reads both ask here.
    @inline(never)
    package func missingValue() -> FlagValue? {
        prepared.snapshot.missingFlagsAreOff ? .bool(false) : nil
    }

    /// ``lookup(_:hash:killSwitchKey:)`` while the kill switch is on, out of the read path.
    @inline(never)
    private func killedLookup(_ name: String, killSwitchKey: String, hash: Int) -> FlagValue? {
        if name != killSwitchKey { return nil }
        if held { return .bool(true) }
        return prepared.table.value(name, hash: hash)
    }

    /// ``lookup(_:hash:killSwitchKey:)`` hashing `name` here (untyped reads).
    package func lookup(_ name: String, killSwitchKey: String) -> FlagValue? {
        lookup(name, hash: FlagNameHash.of(name), killSwitchKey: killSwitchKey)
    }

    /// Forgets which flags' unknown list members were reported (their values changed).
    package mutating func valuesChanged() { unknownReported.removeAll() }

    /// Records that `flag`'s unknown list members are being reported; false if they already were
    /// since the values last changed.
    package mutating func noteUnknown(_ flag: String) -> Bool { unknownReported.insert(flag).inserted }
}

/// What a client's readers get, for telling subscribers what changed: the snapshot's values
/// (killed by the hold too) and the overrides over them.
internal struct ServedValues: Sendable {
    /// The snapshot's values, with the kill hold applied.
    package let prepared: PreparedSnapshot
    /// The overrides over them.
    package let overrides: OverrideLayer?

    /// Whether reads are killed.
    package var killed: Bool { prepared.killed }
    /// The snapshot.
    package var snapshot: FlagSnapshot { prepared.snapshot }
}

/// A served state's status and labels, read in one critical section.
package struct ServedLabels: Sendable, Equatable {
    /// The status.
    package let status: ProviderStatus
    /// Where the served snapshot's values come from.
    package let source: FlagSource
    /// The reason every snapshot value reports (cached or stale data), if any.
    package let reasonOverride: FlagReason?
    /// Whether the kill switch is on.
    package let killed: Bool
}
