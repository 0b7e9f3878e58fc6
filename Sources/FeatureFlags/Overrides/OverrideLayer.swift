/// One client's immutable view of the overrides, without its kill-switch key (never overridden).
internal final class OverrideLayer: Sendable {
    /// The overridden values by name.
    package let values: [String: FlagValue]
    /// The same, as reads look them up.
    let table: FlagTable

    /// The layer of `values` without `killSwitchKey`; nil when nothing is left.
    package init?(_ values: [String: FlagValue], killSwitchKey: String) {
        var values = values
        values[killSwitchKey] = nil
        guard !values.isEmpty else { return nil }
        self.values = values
        table = FlagTable(snapshot: values.mapValues { FlagEntry(value: $0) }, defaults: [:])
    }

    /// The overridden value of `name`, whose ``FlagNameHash`` is `hash`.
    @inline(__always)
    func value(_ name: String, hash: Int) -> FlagValue? { table.value(name, hash: hash) }
}

extension FlagOverrideSource {
    /// Attaches a client: `apply` gets its layer on every change; returns the observer's id.
    func attach(killSwitchKey: String, _ apply: @escaping @Sendable (OverrideLayer?) -> Void) -> Int {
        attach { values in apply(OverrideLayer(values, killSwitchKey: killSwitchKey)) }.id
    }

    /// Calls `apply` with the current layer while no change can happen, so none made during a client's setup is lost.
    func resync(killSwitchKey: String, _ apply: (OverrideLayer?) -> Void) {
        whileUnchanged { apply(OverrideLayer($0, killSwitchKey: killSwitchKey)) }
    }

    /// What a client reports about the overrides when it starts carrying them.
    package var problemEvents: [FlagEvent] { problems.map { FlagEvent.overridesRejected(reason: $0) } }
}
