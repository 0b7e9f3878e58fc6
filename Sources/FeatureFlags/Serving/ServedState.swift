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
    /// kill switch is on. Built before taking any lock: the lock only swaps it in.
    package func prepare(_ snapshot: FlagSnapshot) -> PreparedSnapshot {
        var values: [String: FlagValue] = [:]
        values.reserveCapacity(snapshot.flags.count + defaults.count)
        for (name, entry) in defaults { values[name] = entry.value }
        for (name, entry) in snapshot.flags { values[name] = entry.value }
        return PreparedSnapshot(snapshot: snapshot, values: values, killed: snapshot.isKillSwitchOn(key: killSwitchKey))
    }
}

/// A snapshot with its read-ready values. Immutable.
package struct PreparedSnapshot: Sendable {
    /// The snapshot.
    package let snapshot: FlagSnapshot
    /// What a plain read of each name returns (before the kill switch).
    package let values: [String: FlagValue]
    /// Whether the snapshot turns the kill switch on.
    package let killed: Bool

    /// No flags: code defaults (and bundled defaults, once prepared by a base).
    package static let empty = PreparedSnapshot(snapshot: .empty, values: [:], killed: false)

    /// The same values, killed when `held` (the kill switch held on the device) even if the
    /// snapshot itself does not say so.
    package func holding(_ held: Bool) -> PreparedSnapshot {
        held && !killed ? PreparedSnapshot(snapshot: snapshot, values: values, killed: true) : self
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
    /// Counts the changes of everything above: a ``ServingCell`` publishes the state to its
    /// readers when this moves.
    package private(set) var revision: UInt64 = 0
    /// Flags whose unknown list members were reported since the values last changed.
    package var unknownReported: Set<String> = []

    /// Serving `prepared` from `source` with `status`.
    package init(
        _ prepared: PreparedSnapshot, source: FlagSource, status: ProviderStatus, reasonOverride: FlagReason? = nil,
        held: Bool = false
    ) {
        self.prepared = prepared
        self.source = source
        self.status = status
        self.reasonOverride = reasonOverride
        self.held = held
    }

    /// Whether reads are killed now: by the snapshot or by the hold.
    package var killed: Bool { prepared.killed || held }

    /// What readers get: the snapshot's values, killed by the hold too.
    package var effective: PreparedSnapshot { prepared.holding(held) }

    /// Serves `next` from `source` with the given reason; the status is kept unless given.
    /// Returns what readers got before, for the change notification.
    @discardableResult
    package mutating func serve(
        _ next: PreparedSnapshot, source: FlagSource, status: ProviderStatus? = nil, reasonOverride: FlagReason?
    ) -> PreparedSnapshot {
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
    package func lookup(_ name: String, killSwitchKey: String) -> FlagValue? {
        if prepared.killed || held {
            if name != killSwitchKey { return nil }
            if held { return .bool(true) }
        }
        return prepared.values[name]
    }

    /// The read with its explanation, computed on a copy outside the lock.
    package func details<Value>(_ key: FlagKey<Value>, base: ServingBase, now: Date) -> FlagDetails<Value> {
        let snapshot = prepared.snapshot
        let fromSnapshot = snapshot.flags[key.name] != nil
        let entry = snapshot.flags[key.name] ?? base.defaults[key.name]
        let version = snapshot.version
        let age = source == .codeDefault ? nil : snapshot.age(at: now)
        if killed, key.name != base.killSwitchKey {
            return FlagDetails(
                key: key.name, value: key.defaultValue, reason: .disabled, source: .killSwitch,
                snapshotVersion: version, age: age)
        }
        if held, key.name == base.killSwitchKey, let on = key.convert(.bool(true)) {
            return FlagDetails(
                key: key.name, value: on, reason: .disabled, source: .killSwitch, snapshotVersion: version, age: age)
        }
        guard let entry else {
            let code: FlagErrorCode = status == .notReady ? .providerNotReady : .flagNotFound
            return FlagDetails(
                key: key.name, value: key.defaultValue, reason: .error, errorCode: code,
                errorMessage: "no flag named \"\(key.name)\"", source: .codeDefault, snapshotVersion: version)
        }
        let layerSource = fromSnapshot ? source : .bundledDefaults
        let layerVersion = fromSnapshot ? version : nil
        let layerAge = fromSnapshot ? age : nil
        guard let raw = entry.value else {
            return FlagDetails(
                key: key.name, value: key.defaultValue, variant: entry.variant, reason: entry.reason ?? .default,
                errorCode: entry.errorCode, errorMessage: entry.errorCode.map { "service reported \($0.rawValue)" },
                source: .codeDefault, snapshotVersion: layerVersion, age: layerAge, metadata: entry.metadata)
        }
        guard let typed = key.convert(raw) else {
            return FlagDetails(
                key: key.name, value: key.defaultValue, variant: entry.variant, reason: .error,
                errorCode: .typeMismatch,
                errorMessage: "expected \(Value.self), found \(raw.typeName)", source: .codeDefault,
                snapshotVersion: layerVersion, age: layerAge, metadata: entry.metadata)
        }
        let reason: FlagReason
        if !fromSnapshot {
            reason = .static
        } else {
            reason = reasonOverride ?? entry.reason ?? (layerSource == .override ? .static : .unknown)
        }
        return FlagDetails(
            key: key.name, value: typed, variant: entry.variant, reason: reason, source: layerSource,
            snapshotVersion: layerVersion, age: layerAge, metadata: entry.metadata)
    }

    /// Forgets which flags' unknown list members were reported (their values changed).
    package mutating func valuesChanged() { unknownReported.removeAll() }

    /// Records that `flag`'s unknown list members are being reported; false if they already were
    /// since the values last changed.
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
