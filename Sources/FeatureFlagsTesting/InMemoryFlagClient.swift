public import Foundation
public import FeatureFlags

/// A ``FeatureFlagClient`` whose values a test sets directly. No disk, no network, no
/// globals: build one per test and inject it.
///
/// ```swift
/// let flags = InMemoryFlagClient(["new_checkout": true])
/// let model = CheckoutModel(flags: flags)
/// flags.set(.newCheckout, false)   // emits a change, like a real provider
/// ```
///
/// Values report source `override` and reason `STATIC`.
public final class InMemoryFlagClient: FeatureFlagClient {
    /// The overrides this client carries, if any (a debug menu under test).
    public let overrides: (any FlagOverrideSource)?
    private let serving: FlagServing
    private let mutations = Locked(())
    private let now: @Sendable () -> Date
    private let overridesObserver: Int?
    private let tracked = Locked<[FlagTrackingEvent]>([])

    /// A client serving `values` with `status`.
    /// - Parameters:
    ///   - killSwitchKey: the flag whose `true` forces every read to its safe default.
    ///   - overrides: overrides over `values`, beneath the kill switch, as a provider carries them.
    ///   - now: the clock used for ages.
    public init(
        _ values: [String: FlagValue] = [:], status: ProviderStatus = .ready, version: String? = nil,
        killSwitchKey: String = "kill_switch", overrides: (any FlagOverrideSource)? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.now = now
        self.overrides = overrides
        let base = ServingBase(killSwitchKey: killSwitchKey)
        let serving = FlagServing(
            base.prepare(FlagSnapshot(values: values, version: version, fetchedAt: now())), source: .override, status: status,
            base: base, name: "InMemoryFlagClient", now: now)
        self.serving = serving
        overridesObserver = serving.carry(overrides)
        for event in overrides?.problemEvents ?? [] { serving.publisher.emit(event) }
    }

    deinit {
        if let overridesObserver { overrides?.detach(overridesObserver) }
    }

    // MARK: FeatureFlagClient

    /// The raw value of `name` (nil when missing, valueless or killed).
    public func flagValue(_ name: String) -> FlagValue? { serving.lookup(name) }
    /// The raw value of `name`, looked up by the hash its ``FlagKey`` computed.
    public func flagValue(_ name: String, nameHash: Int) -> FlagValue? { serving.lookup(name, hash: nameHash) }
    /// The value with source `override`, or the default with the reason it was used.
    public func details<Value>(_ key: FlagKey<Value>) -> FlagDetails<Value> { serving.details(key) }
    /// ``details(_:)`` between this client's hooks and `hooks`, which get `hints`.
    public func details<Value>(_ key: FlagKey<Value>, hooks: [any FlagHook], hints: [String: FlagValue]) -> FlagDetails<Value> {
        serving.details(key, hooks: hooks, hints: hints)
    }
    /// Runs `hooks` around every ``details(_:)`` from now on, after those added before
    /// (see ``FlagHook``). Plain reads never run hooks.
    public func addHooks(_ hooks: any FlagHook...) { serving.hooks.add(hooks) }
    /// The same, untyped: the raw value, or nil where a key's default applies.
    public func flagDetails(_ name: String, nameHash: Int) -> FlagDetails<FlagValue?> {
        serving.flagDetails(name, nameHash: nameHash)
    }
    /// The values as a snapshot.
    public var snapshot: FlagSnapshot { serving.snapshot }
    /// The status set with ``setStatus(_:)`` (`READY` unless set).
    public var status: ProviderStatus { serving.status }
    /// Whether `kill_switch` (or the configured key) is set to `true`.
    public var isKillSwitchActive: Bool { serving.isKillSwitchActive }
    /// A change for every ``set(_:_:)``, ``remove(_:)`` or ``replaceAll(with:)`` that alters a value.
    public func changes() -> AsyncStream<FlagChange> { serving.publisher.changes.subscribe() }
    /// `configurationChanged`, `killSwitch` and anything sent with ``emit(_:)``.
    public func events() -> AsyncStream<FlagEvent> { serving.publisher.events.subscribe() }
    /// Reports unknown list members as ``FlagEvent/unknownValues(flag:values:)``, once per
    /// flag until its values change.
    public func noteUnknownValues(_ values: [String], in flag: String) { serving.noteUnknownValues(values, in: flag) }

    /// The most recent events (up to 32), oldest first.
    public var recentEvents: [FlagEvent] { serving.publisher.recentEvents }

    /// Records the event (see ``trackedEvents``) and sends it as a ``FlagEvent/tracked(_:)`` event.
    public func track(_ eventName: String, value: Double?, attributes: [String: FlagValue]) {
        guard let event = serving.track(eventName, value: value, attributes: attributes) else { return }
        tracked.withLock { $0.append(event) }
    }

    /// Every event tracked so far, oldest first: what a test asserts on.
    public var trackedEvents: [FlagTrackingEvent] { tracked.withLock { $0 } }

    // MARK: Setting values

    /// Sets the flag `key` to `value`.
    public func set<Value>(_ key: FlagKey<Value>, _ value: Value) {
        guard let encoded = key.flagValue(for: value) else { return }
        set(key.name, encoded)
    }

    /// Sets the flag `name` to a raw value.
    public func set(_ name: String, _ value: FlagValue) { set(name, entry: FlagEntry(value: value)) }

    /// Sets the flag `name` to a full entry (variant, reason, error code, metadata).
    public func set(_ name: String, entry: FlagEntry) {
        update { $0[name] = entry }
    }

    /// Removes the flag `name`: reads return the key's default with `FLAG_NOT_FOUND`.
    public func remove(_ name: String) { update { $0[name] = nil } }

    /// Replaces every value at once (one change event).
    public func replaceAll(with values: [String: FlagValue]) {
        update { $0 = values.mapValues { FlagEntry(value: $0) } }
    }

    /// Turns the kill switch on or off.
    public func setKillSwitch(_ active: Bool) { set(serving.base.killSwitchKey, .bool(active)) }

    /// Sets the status a consumer sees.
    public func setStatus(_ status: ProviderStatus) { serving.setStatus(status) }

    /// Sends `event` to event subscribers, as a real provider would.
    public func emit(_ event: FlagEvent) { serving.publisher.emit(event) }

    /// Ends the change and event streams.
    public func shutdown() { serving.publisher.finish() }

    private func update(_ change: (inout [String: FlagEntry]) -> Void) {
        mutations.withLock { _ in
            let old = serving.snapshot
            var flags = old.flags
            change(&flags)
            let next = FlagSnapshot(
                flags: flags, version: old.version, fetchedAt: now(), contextFingerprint: old.contextFingerprint)
            serving.serve(serving.base.prepare(next), source: .override, reasonOverride: nil)
        }
    }
}
