import Foundation

/// What a client's readers see at one instant: its served state, immutable, replaced whole.
internal final class ServedView: Sendable {
    /// The values, their labels and the status.
    package let served: ServedState

    init(_ served: ServedState) { self.served = served }
}

/// A client state that contains what the client serves.
internal protocol ServesValues: Sendable {
    /// The served part of the state: the values, their labels and the status.
    var served: ServedState { get }
}

extension ServedState: ServesValues {
    /// Itself.
    package var served: ServedState { self }
}

/// A ``ServingCell``'s locked part; not nested, to avoid a conformance scan at launch.
private struct ServingCellInner<State> {
    var state: State
    /// The revision of `state.served` that readers see.
    var published: UInt64
}

/// A client's state under one lock; changes to its served part are published before the lock
/// is released, so readers see each change whole without locking (see ``ReadPublication``).
internal struct ServingCell<State: ServesValues>: Sendable {
    private let inner: Locked<ServingCellInner<State>>
    private let publication: ReadPublication<ServedView>
    /// The kill-switch key, which plain lookups need.
    package let killSwitchKey: String
    /// Where first reads are reported, when the client reports exposures.
    package let exposures: ExposureLog?

    /// A cell holding `state`, its served part published.
    package init(_ state: State, killSwitchKey: String, exposures: ExposureLog? = nil) {
        inner = Locked(ServingCellInner(state: state, published: state.served.revision))
        publication = ReadPublication(ServedView(state.served))
        self.killSwitchKey = killSwitchKey
        self.exposures = exposures
    }

    /// Runs `body` under the lock; publishes the served part, if changed, before unlocking.
    /// One generic copy for every state and result (writes only: not on the read path).
    @_semantics("optimize.sil.specialize.generic.never")
    package func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        try inner.withLock { inner in
            defer {
                let served = inner.state.served
                if served.revision != inner.published {
                    inner.published = served.revision
                    publication.publish(ServedView(served))
                }
            }
            return try body(&inner.state)
        }
    }

    /// Runs `body` with the state under the lock, read-only.
    package func inspect<R>(_ body: (State) -> R) -> R {
        inner.withLock { body($0.state) }
    }

    /// Runs `body` with the served state readers see now, without locking.
    @inline(__always)
    package func read<R>(_ body: (ServedView) -> R) -> R { publication.read(body) }

    /// The raw value a plain read of `name` starts from (see ``ServedState/lookup(_:hash:killSwitchKey:)``).
    @inline(__always)
    package func lookup(_ name: String) -> FlagValue? { lookup(name, hash: FlagNameHash.of(name)) }

    /// The read of `key` with its explanation; `report` gets unknown list members and the name.
    @inline(__always)
    package func details<Value>(
        _ key: FlagKey<Value>, base: ServingBase, now: Date, report: (_ unknownMembers: [String], _ flag: String) -> Void
    ) -> FlagDetails<Value> {
        let details = read { $0.details(key, base: base, now: now) }
        if let exposures, !exposures.isKnown(key.nameHash), ExposureLog.isExposure(details.source) {
            exposures.note(key.name, hash: key.nameHash, in: read { $0 })
        }
        if key.auditsMembers, details.source != .killSwitch, let audit = key.unknownMembers,
            let raw = lookup(key.name, hash: key.nameHash)
        {
            report(audit(raw), key.name)
        }
        return details
    }

    /// The untyped read of `name` with its explanation (see ``ServedView/rawDetails(_:hash:base:now:)``).
    package func flagDetails(_ name: String, hash: Int, base: ServingBase, now: Date) -> FlagDetails<FlagValue?> {
        read { $0.rawDetails(name, hash: hash, base: base, now: now) }
    }

    /// ``lookup(_:)`` with the name's hash already known (a ``FlagKey``'s).
    @inline(__always)
    package func lookup(_ name: String, hash: Int) -> FlagValue? {
        if let exposures { return reportingLookup(name, hash: hash, exposures) }
        let key = killSwitchKey
        return publication.read { $0.served.lookup(name, hash: hash, killSwitchKey: key) }
    }

    /// ``lookup(_:hash:)`` reporting first reads, out of line so the plain path stays small.
    @inline(never)
    private func reportingLookup(_ name: String, hash: Int, _ exposures: ExposureLog) -> FlagValue? {
        let key = killSwitchKey
        let (value, unreported) = publication.read { view -> (FlagValue?, ServedView?) in
            let value = view.served.lookup(name, hash: hash, killSwitchKey: key)
            return (value, value == nil || exposures.isKnown(hash) ? nil : view)
        }
        if let unreported { exposures.note(name, hash: hash, in: unreported) }
        return value
    }
}
