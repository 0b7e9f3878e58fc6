package import Foundation

/// The bundled defaults and kill-switch key beneath every snapshot a client serves.
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

    /// `snapshot` over the defaults, ready to serve (no `Bool` defaults where missing flags are off).
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
    /// The snapshot's entries over the bundled defaults, as reads look them up.
    package let table: FlagTable
    /// Whether the snapshot turns the kill switch on.
    package let killed: Bool

    /// No flags: code defaults (and bundled defaults, once prepared by a base).
    package static let empty = PreparedSnapshot(snapshot: .empty, table: .empty, killed: false)

    /// Reason for device-served values: `STALE` past TTL, else `CACHED`; nil if evaluated from held rules.
    package func reasonOnDevice(at now: Date) -> FlagReason? {
        if snapshot.isExpired(at: now) { return .stale }
        return snapshot.heldRules == nil ? .cached : nil
    }
}

/// What a client serves at one instant, replaced whole under the client's lock.
struct ServedState: Sendable {
    /// The snapshot and its read-ready values.
    package var prepared: PreparedSnapshot { didSet { revision &+= 1 } }
    /// Where the snapshot's values come from (`code_default` for the empty snapshot).
    package var source: FlagSource { didSet { revision &+= 1 } }
    /// The status.
    package var status: ProviderStatus { didSet { revision &+= 1 } }
    /// Set while serving cached or stale data: every snapshot value reports this reason.
    package var reasonOverride: FlagReason? { didSet { revision &+= 1 } }
    /// The kill switch held on the device (``KillHold``), whatever the snapshot says.
    package var held: Bool { didSet { revision &+= 1 } }
    /// Tester overrides, over the snapshot and beneath the kill switch; nil when none.
    var overrides: OverrideLayer? { didSet { revision &+= 1 } }
    /// The context the values are for.
    package var context: EvaluationContext { didSet { revision &+= 1 } }
    /// The fingerprint of the values' context when the client was not told it; nil otherwise.
    package var unnamedContext: String? { didSet { revision &+= 1 } }
    /// Counts changes above; a ``ServingCell`` republishes when it moves.
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

    /// The snapshot served.
    var snapshot: FlagSnapshot { prepared.snapshot }

    /// Serves `next`, keeping the status unless given; returns the state before.
    @discardableResult
    mutating func serve(
        _ next: PreparedSnapshot, source: FlagSource, status: ProviderStatus? = nil, reasonOverride: FlagReason?
    ) -> ServedState {
        let old = self
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

    /// The flag's raw value; nil when killed (except the kill-switch key), missing or valueless.
    @inline(__always)
    package func lookup(_ name: String, hash: Int, killSwitchKey: String) -> FlagValue? {
        if prepared.killed || held { return killedLookup(name, killSwitchKey: killSwitchKey, hash: hash) }
        if let overrides, let forced = overrides.value(name, hash: hash) { return forced }
        guard let slot = prepared.table.slot(name, hash: hash) else { return missingValue() }
        return slot.pointee.value
    }

    /// The value of a flag the table lacks: `false` where missing flags are off, else nil.
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


    /// Forgets which flags' unknown list members were reported (their values changed).
    package mutating func valuesChanged() { unknownReported.removeAll() }

    /// Marks `flag`'s unknown members reported; false if they already were.
    package mutating func noteUnknown(_ flag: String) -> Bool { unknownReported.insert(flag).inserted }
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
