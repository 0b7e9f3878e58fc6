import Foundation

/// What a client serves: one snapshot, the bundled defaults beneath it, the status, and
/// whether the kill switch is on. Replaced whole under the lock; never mutated in place.
package struct ServingState: Sendable {
    var snapshot: FlagSnapshot
    /// What a plain read returns, precomputed at activation: the bundled defaults overlaid
    /// by the snapshot's values (an entry without a value removes the name). One lookup of a
    /// small value type per read, instead of two lookups copying whole entries.
    var values: [String: FlagValue]
    var status: ProviderStatus
    var killed: Bool
    /// Set while serving cached or stale data: every snapshot value reports this reason.
    var reasonOverride: FlagReason?
}

/// A served state's status and labels, read in one critical section.
package struct ServedLabels: Sendable, Equatable {
    /// The status.
    package let status: ProviderStatus
    /// Where the served snapshot is labelled as coming from.
    package let source: FlagSource
    /// The reason every snapshot value reports (cached or stale data), if any.
    package let reasonOverride: FlagReason?
    /// Whether the kill switch is on.
    package let killed: Bool
}

/// The read path every client shares: one lock around one ``ServingState``, lookups done
/// under the lock (no retain/release of the snapshot), conversion after unlocking.
/// Activations diff and notify after unlocking; callers serialise their activations.
package final class FlagServing: Sendable {
    /// The flag whose `true` forces every read to its key's default.
    package let killSwitchKey: String
    private let state: Locked<ServingState>
    /// The bundled defaults beneath every snapshot; fixed for the client's life.
    package let defaults: [String: FlagEntry]
    private let clock: @Sendable () -> Date
    /// Subscribers to value changes.
    package let changeBroadcaster = Broadcaster<FlagChange>()
    /// Subscribers to events; a new one first receives the recent history.
    package let eventBroadcaster = Broadcaster<FlagEvent>(replay: 32)
    /// The app's event handler, if it gave one.
    package let eventHandler: EventHandlerQueue?
    /// Flags whose unknown list members were reported since the last change of values.
    private let unknownValuesReported = Locked<Set<String>>([])

    /// Serving `snapshot` over `defaults` with `status`.
    package init(
        snapshot: FlagSnapshot, defaults: [String: FlagEntry] = [:], status: ProviderStatus,
        reasonOverride: FlagReason? = nil, killSwitchKey: String, now: @escaping @Sendable () -> Date,
        eventHandler: (@Sendable (FlagEvent) -> Void)? = nil
    ) {
        self.killSwitchKey = killSwitchKey
        self.eventHandler = eventHandler.map(EventHandlerQueue.init)
        self.clock = now
        self.defaults = defaults
        state = Locked(
            ServingState(
                snapshot: snapshot, values: Self.effectiveValues(snapshot, defaults), status: status,
                killed: snapshot.isKillSwitchOn(key: killSwitchKey), reasonOverride: reasonOverride))
    }

    /// The defaults overlaid by the snapshot's values.
    private static func effectiveValues(_ snapshot: FlagSnapshot, _ defaults: [String: FlagEntry]) -> [String: FlagValue] {
        var values: [String: FlagValue] = [:]
        values.reserveCapacity(snapshot.flags.count + defaults.count)
        for (name, entry) in defaults { values[name] = entry.value }
        for (name, entry) in snapshot.flags { values[name] = entry.value }
        return values
    }

    /// The non-generic half of a read: the flag's value, or nil when the kill switch is on
    /// (and `name` is not the kill-switch key), the flag is missing or it carries no value.
    /// One lock, one or two dictionary lookups. Kept out of the generic function so that
    /// reads through `any FeatureFlagClient` (unspecialised) pay no generic overhead here.
    @inline(__always)
    package func lookup(_ name: String) -> FlagValue? {
        state.withLock { s in
            if s.killed, name != killSwitchKey { return nil }
            return s.values[name]
        }
    }

    /// The read with its explanation.
    package func details<Value>(_ key: FlagKey<Value>) -> FlagDetails<Value> {
        let killKey = killSwitchKey
        let defaults = self.defaults
        let (s, fromSnapshot, entry) = state.withLock { s -> (ServingState, Bool, FlagEntry?) in
            if let e = s.snapshot.flags[key.name] { return (s, true, e) }
            return (s, false, defaults[key.name])
        }
        let now = clock()
        let version = s.snapshot.version
        let age = s.snapshot.origin == .codeDefault ? nil : s.snapshot.age(at: now)
        if s.killed, key.name != killKey {
            return FlagDetails(
                key: key.name, value: key.defaultValue, reason: .disabled, source: .killSwitch,
                snapshotVersion: version, age: age)
        }
        guard let entry else {
            let code: FlagErrorCode = s.status == .notReady ? .providerNotReady : .flagNotFound
            return FlagDetails(
                key: key.name, value: key.defaultValue, reason: .error, errorCode: code,
                errorMessage: "no flag named \"\(key.name)\"", source: .codeDefault, snapshotVersion: version)
        }
        let source = fromSnapshot ? s.snapshot.origin : .bundledDefaults
        let layerVersion = fromSnapshot ? version : nil
        let layerAge = fromSnapshot ? age : nil
        guard let raw = entry.value else {
            return FlagDetails(
                key: key.name, value: key.defaultValue, variant: entry.variant, reason: entry.reason ?? .default,
                errorCode: entry.errorCode, errorMessage: entry.errorCode.map { "service reported \($0.rawValue)" },
                source: .codeDefault, snapshotVersion: layerVersion, age: layerAge, metadata: entry.metadata)
        }
        if key.auditsMembers, let audit = key.unknownMembers { noteUnknownValues(audit(raw), in: key.name) }
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
            reason = s.reasonOverride ?? entry.reason ?? (source == .override ? .static : .unknown)
        }
        return FlagDetails(
            key: key.name, value: typed, variant: entry.variant, reason: reason, source: source,
            snapshotVersion: layerVersion, age: layerAge, metadata: entry.metadata)
    }

    /// The snapshot served now.
    package var snapshot: FlagSnapshot { state.withLock { $0.snapshot } }
    /// The status now.
    package var status: ProviderStatus { state.withLock { $0.status } }
    /// Whether the kill switch is on now.
    package var isKillSwitchActive: Bool { state.withLock { $0.killed } }
    /// The current time from the injected clock.
    package func now() -> Date { clock() }

    /// Status and labels read together, in one critical section: a combination that was
    /// served at some instant, never a mix of two.
    package var labels: ServedLabels {
        state.withLock { s in
            ServedLabels(status: s.status, source: s.snapshot.origin, reasonOverride: s.reasonOverride, killed: s.killed)
        }
    }

    /// Serves `snapshot` from now on, then reports the flags whose values changed and a
    /// kill-switch flip. Returns the changed keys.
    @discardableResult
    package func activate(_ snapshot: FlagSnapshot, status: ProviderStatus? = nil, reasonOverride: FlagReason?) -> Set<String> {
        let newKilled = snapshot.isKillSwitchOn(key: killSwitchKey)
        let values = Self.effectiveValues(snapshot, defaults)
        let (old, oldKilled) = state.withLock { s in
            let previous = (s.snapshot, s.killed)
            s.snapshot = snapshot
            s.values = values
            s.killed = newKilled
            s.reasonOverride = reasonOverride
            if let status { s.status = status }
            return previous
        }
        return notifyChanges(from: old, wasKilled: oldKilled, to: snapshot, killed: newKilled)
    }

    /// After a failure, keeps serving what is served — or `overlay`, when given (values with
    /// the kill switch on) — as the Last-Known-Good, in one critical section: the status
    /// becomes `forced` or, when the values are past their TTL, `STALE`, else `ERROR`; values
    /// from the network or the fallback are labelled `fallback` with reason `CACHED` (`STALE`
    /// past the TTL). Code defaults keep their label.
    package func fallBack(forcing forced: ProviderStatus?, overlay: FlagSnapshot? = nil) -> FallBack {
        let now = clock()
        let overlayValues = overlay.map { Self.effectiveValues($0, defaults) }
        let overlayKilled = overlay?.isKillSwitchOn(key: killSwitchKey)
        let (old, oldKilled, result) = state.withLock { s -> (FlagSnapshot, Bool, FallBack) in
            let old = (s.snapshot, s.killed)
            if let overlay, let overlayValues, let overlayKilled {
                s.snapshot = overlay
                s.values = overlayValues
                s.killed = overlayKilled
            }
            let expired = s.snapshot.origin != .codeDefault && s.snapshot.isExpired(at: now)
            let next = forced ?? (expired ? .stale : .error)
            let previous = s.status
            s.status = next
            if s.snapshot.origin == .network || s.snapshot.origin == .fallback {
                s.snapshot = s.snapshot.servedFrom(.fallback)
                s.reasonOverride = expired ? .stale : .cached
            }
            return (old.0, old.1, FallBack(previous: previous, next: next, snapshot: s.snapshot))
        }
        if overlay != nil {
            _ = notifyChanges(from: old, wasKilled: oldKilled, to: result.snapshot, killed: overlayKilled ?? oldKilled)
        }
        return result
    }

    /// What ``fallBack(forcing:overlay:)`` did.
    package struct FallBack: Sendable {
        /// The status before.
        package let previous: ProviderStatus
        /// The status now.
        package let next: ProviderStatus
        /// The snapshot served now.
        package let snapshot: FlagSnapshot
    }

    /// Reports the flags whose effective values differ between `old` and `snapshot`, and a
    /// kill-switch flip; returns the keys.
    private func notifyChanges(from old: FlagSnapshot, wasKilled oldKilled: Bool, to snapshot: FlagSnapshot, killed newKilled: Bool) -> Set<String> {
        var keys = snapshot.changedKeys(comparedTo: old)
        if oldKilled != newKilled {
            keys.formUnion(old.flags.keys)
            keys.formUnion(snapshot.flags.keys)
            keys.formUnion(defaults.keys)
            emit(.killSwitch(active: newKilled))
        }
        if !keys.isEmpty {
            unknownValuesReported.withLock { $0.removeAll() }
            changeBroadcaster.yield(FlagChange(keys: keys, snapshot: snapshot, killSwitchActive: newKilled))
            emit(.configurationChanged(keys: keys))
        }
        return keys
    }

    /// Sets the status; returns the previous one.
    @discardableResult
    package func setStatus(_ status: ProviderStatus) -> ProviderStatus {
        state.withLock { s in
            defer { s.status = status }
            return s.status
        }
    }

    /// Sends `event` to event subscribers.
    package func emit(_ event: FlagEvent) {
        eventBroadcaster.yield(event)
        eventHandler?.deliver(event)
    }

    /// Reports list members of `flag` that the app's enum does not know — once per flag
    /// until the served values change.
    package func noteUnknownValues(_ values: [String], in flag: String) {
        guard !values.isEmpty else { return }
        let first = unknownValuesReported.withLock { $0.insert(flag).inserted }
        if first { emit(.unknownValues(flag: flag, values: values)) }
    }

    /// Ends every change and event stream.
    package func finish() {
        changeBroadcaster.finish()
        eventBroadcaster.finish()
    }
}
