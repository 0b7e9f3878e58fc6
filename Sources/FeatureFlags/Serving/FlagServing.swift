package import Foundation

/// The simple clients' serving cell: lock-free reads; a writers' lock keeps notifications in order.
package final class FlagServing: Sendable {
    /// The defaults and the kill-switch key.
    package let base: ServingBase
    /// Where changes and events go.
    package let publisher: FlagPublisher
    /// The hooks run around ``details(_:hooks:hints:)``.
    package let hooks: FlagHooks
    /// Names the client to hooks.
    private let metadata: String
    /// How much of the context tracking and exposure events carry.
    private let eventContext: EventContextDetail
    private let state: ServingCell<ServedState>
    private let writers = Locked(())
    /// The wall clock reads and labels are judged at (ages, TTLs).
    let clock: @Sendable () -> Date

    /// Serving `prepared` (prepared by `base`) from `source` with `status`.
    package init(
        _ prepared: PreparedSnapshot, source: FlagSource, status: ProviderStatus, reasonOverride: FlagReason? = nil,
        held: Bool = false, context: EvaluationContext = .anonymous, unnamedContext: String? = nil, base: ServingBase, name: String,
        exposures: Bool = false, eventContext: EventContextDetail = .fingerprint,
        now: @escaping @Sendable () -> Date, eventHandler: (@Sendable (FlagEvent) -> Void)? = nil
    ) {
        self.eventContext = eventContext
        self.base = base
        self.clock = now
        let publisher = FlagPublisher(handler: eventHandler)
        self.publisher = publisher
        self.metadata = name
        self.hooks = FlagHooks([], timeLimit: FlagHooks.defaultTimeLimit, clock: CoarseElapsedClock()) { publisher.emit($0) }
        var served = ServedState(prepared, source: source, status: status, reasonOverride: reasonOverride, held: held, context: context)
        served.unnamedContext = unnamedContext
        self.state = ServingCell(
            served,
            killSwitchKey: base.killSwitchKey,
            exposures: exposures ? ExposureLog(detail: eventContext, base: base, now: now) { publisher.emit($0) } : nil)
    }

    /// Sends and returns a ``FlagEvent/tracked(_:)`` event with the served context.
    @discardableResult
    package func track(_ eventName: String, value: Double?, attributes: [String: FlagValue]) -> FlagTrackingEvent? {
        publisher.track(eventName, value: value, attributes: attributes, context: state.read { EventContext(of: $0.served, detail: eventContext) })
    }

    /// The raw value a read of `name` starts from.
    @inline(__always)
    package func lookup(_ name: String) -> FlagValue? { state.lookup(name) }

    /// ``lookup(_:)`` by the hash a ``FlagKey`` computed for `name`.
    @inline(__always)
    package func lookup(_ name: String, hash: Int) -> FlagValue? { state.lookup(name, hash: hash) }

    /// The read with its explanation, between the client's hooks when it has any.
    package func details<Value>(_ key: FlagKey<Value>) -> FlagDetails<Value> {
        guard hooks.areIdle else { return details(key, hooks: [], hints: [:]) }
        return state.details(key, base: base, now: clock()) { noteUnknownValues($0, in: $1) }
    }

    /// The read with its explanation, between the hooks (the client's, then `invocation`).
    package func details<Value>(_ key: FlagKey<Value>, hooks invocation: [any FlagHook], hints: [String: FlagValue]) -> FlagDetails<Value> {
        hooks.run(key, invocation: invocation, hints: hints, context: { state.read { $0.served.context } }, provider: metadata) {
            state.details(key, base: base, now: clock()) { noteUnknownValues($0, in: $1) }
        }
    }

    /// The untyped read with its explanation.
    package func flagDetails(_ name: String, nameHash: Int) -> FlagDetails<FlagValue?> {
        state.flagDetails(name, hash: nameHash, base: base, now: clock())
    }

    /// The snapshot served now.
    package var snapshot: FlagSnapshot { state.read { $0.served.prepared.snapshot } }
    /// The status now.
    package var status: ProviderStatus { state.read { $0.served.status } }
    /// Whether the kill switch is on now.
    package var isKillSwitchActive: Bool { state.read { $0.served.killed } }

    /// Serves `next` (prepared by ``base``), then reports the flags that changed.
    package func serve(
        _ next: PreparedSnapshot, source: FlagSource, reasonOverride: FlagReason?, held: Bool? = nil, context: EvaluationContext? = nil
    ) {
        change { s in
            s.serve(next, source: source, reasonOverride: reasonOverride)
            if let held { s.held = held }
            if let context {
                s.context = context
                s.unnamedContext = nil
            }
        }
    }

    /// Serves and follows `overrides`; returns the id for ``FlagOverrideSource/detach(_:)``.
    package func carry(_ overrides: (any FlagOverrideSource)?) -> Int? {
        guard let overrides else { return nil }
        let id = overrides.attach(killSwitchKey: base.killSwitchKey) { [weak self] layer in
            self?.serveOverrides(layer)
        }
        overrides.resync(killSwitchKey: base.killSwitchKey) { serveOverrides($0) }
        return id
    }

    /// Serves `overrides` over the snapshot from now on, then reports the flags whose values changed.
    func serveOverrides(_ overrides: OverrideLayer?) {
        change { $0.overrides = overrides }
    }

    /// Applies `body`, then reports the flags that changed, in order.
    private func change(_ body: (inout ServedState) -> Void) {
        writers.withLock { _ in
            let (old, new) = state.withLock { s in
                let old = s
                body(&s)
                return (old, s)
            }
            let keys = publisher.publish(from: old, to: new, base: base)
            state.exposures?.servedChanged()
            if !keys.isEmpty { state.withLock { $0.valuesChanged() } }
        }
    }

    /// Sets the status.
    package func setStatus(_ status: ProviderStatus) {
        state.withLock { $0.status = status }
    }

    /// Reports `flag`'s unknown list members once per flag until the values change.
    package func noteUnknownValues(_ values: [String], in flag: String) {
        guard !values.isEmpty else { return }
        if state.withLock({ $0.noteUnknown(flag) }) { publisher.emit(.unknownValues(flag: flag, values: values)) }
    }
}
