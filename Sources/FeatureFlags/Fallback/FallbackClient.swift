public import Foundation

/// The offline client for extensions, widgets and tools: serves one context's Last-Known-Good
/// from a ``LastKnownGoodStore`` over the bundled defaults, and never fetches.
/// ```swift
/// let flags = FallbackClient(store: LastKnownGoodStore(fileURL: sharedContainerFile), context: user)
/// ```
/// Values report `fallback`/`CACHED` (`STALE` past TTL); the status is always `READY`; load
/// problems are events. With endpoints and trusted keys, only what a trusted key signed is served.
public final class FallbackClient: FeatureFlagClient {
    /// The store read from.
    public let store: LastKnownGoodStore
    /// The overrides this client carries, if any.
    public let overrides: (any FlagOverrideSource)?
    /// How the file is read (held rules, trusted keys), when the app's endpoints were given.
    private let policy: DevicePolicy?
    /// How a merged identity's members are merged when it is made again from them.
    private let merge: ContextMerge
    private let serving: FlagServing
    private let overridesObserver: Int?

    /// Serves the store's snapshot for `context` (nil: the most recent one) over `bundledDefaults`.
    /// - Parameters:
    ///   - overrides: values testers force on this device, beneath the kill switch.
    ///   - endpoints: the app's endpoints: held flagd rules are evaluated for the context, and with
    ///     trusted keys only signed values are served (else defaults and `fallback_tampered`).
    ///   - strategy: how the endpoints combine; pass the fetcher's `Configuration.strategy` (a set's services
    ///     each serve their own held values).
    ///   - merge: how a merged identity is rebuilt; pass the provider's `Configuration.merge`.
    public convenience init(
        store: LastKnownGoodStore, context: EvaluationContext? = nil, bundledDefaults: BundledDefaults = .none,
        killSwitchKey: String = "kill_switch", overrides: (any FlagOverrideSource)? = nil, exposures: Bool = false,
        eventContext: EventContextDetail = .fingerprint, endpoints: [FlagEndpoint] = [], strategy: ServiceStrategy = .chain,
        merge: ContextMerge = ContextMerge(), now: @escaping @Sendable () -> Date = coarseWallClockNow
    ) {
        self.init(
            store: store, context: context, bundledDefaults: bundledDefaults, killSwitchKey: killSwitchKey, overrides: overrides,
            exposures: exposures, eventContext: eventContext, endpoints: endpoints, strategy: strategy, trust: nil, merge: merge, now: now)
    }

    /// The designated initialiser, with the keys stored answers must verify with.
    package init(
        store: LastKnownGoodStore, context: EvaluationContext?, bundledDefaults: BundledDefaults, killSwitchKey: String,
        overrides: (any FlagOverrideSource)?, exposures: Bool, eventContext: EventContextDetail, endpoints: [FlagEndpoint],
        strategy: ServiceStrategy = .chain, trust: SignatureTrust?, merge: ContextMerge, now: @escaping @Sendable () -> Date
    ) {
        self.store = store
        self.overrides = overrides
        policy = endpoints.isEmpty && trust == nil ? nil : DevicePolicy(trust: trust?.verifier, endpoints: endpoints, strategy: strategy)
        self.merge = merge
        let reader = LastKnownGoodReader(store: store, bundledDefaults: bundledDefaults, killSwitchKey: killSwitchKey)
        let served = context?.fingerprint ?? store.fingerprints.first
        let answer = LastKnownGoodReader.answer(
            for: context, fingerprint: served, in: store, base: reader.base, checkedBy: policy, merge: merge, at: now())
        let (prepared, source, held) = (answer.prepared, answer.source, answer.held)
        let serving = FlagServing(
            prepared, source: source, status: .ready, reasonOverride: prepared.reasonOnDevice(at: now()), held: held, context: context ?? .anonymous,
            unnamedContext: context == nil ? served : nil,
            base: reader.base, name: "FallbackClient", exposures: exposures, eventContext: eventContext, now: now)
        self.serving = serving
        overridesObserver = serving.carry(overrides)
        // What failed the trust check is only reported: this client never writes the file.
        var events = reader.events + (answer.problem.map { [$0] } ?? []) + answer.tamperedEvents { _ in nil }
        if prepared.killed || held { events.append(.killSwitch(active: true)) }
        for event in events + (overrides?.problemEvents ?? []) { serving.publisher.emit(event) }
        serving.publisher.emit(.ready)
    }

    deinit {
        if let overridesObserver { overrides?.detach(overridesObserver) }
    }

    /// Loads the store at `fileURL` (see ``LastKnownGoodStore/init(fileURL:capacity:)``) and serves it.
    public convenience init(
        fileURL: URL = LastKnownGoodStore.defaultFileURL(), context: EvaluationContext? = nil,
        bundledDefaults: BundledDefaults = .none, killSwitchKey: String = "kill_switch", overrides: (any FlagOverrideSource)? = nil,
        endpoints: [FlagEndpoint] = [], strategy: ServiceStrategy = .chain, merge: ContextMerge = ContextMerge(),
        now: @escaping @Sendable () -> Date = coarseWallClockNow
    ) {
        self.init(
            store: LastKnownGoodStore(fileURL: fileURL), context: context, bundledDefaults: bundledDefaults,
            killSwitchKey: killSwitchKey, overrides: overrides, endpoints: endpoints, strategy: strategy, merge: merge, now: now)
    }

    // MARK: FeatureFlagClient

    /// The raw value of `name` (nil when missing, valueless or killed).
    public func flagValue(_ name: String) -> FlagValue? { serving.lookup(name) }
    /// The raw value of `name`, looked up by the hash its ``FlagKey`` computed.
    public func flagValue(_ name: String, nameHash: Int) -> FlagValue? { serving.lookup(name, hash: nameHash) }
    /// The value and where it came from (`fallback`, `bundled_defaults`, `code_default`, `kill_switch`).
    public func details<Value>(_ key: FlagKey<Value>) -> FlagDetails<Value> { serving.details(key) }
    /// ``details(_:)`` between this client's hooks and `hooks`, which get `hints`.
    public func details<Value>(_ key: FlagKey<Value>, hooks: [any FlagHook], hints: [String: FlagValue]) -> FlagDetails<Value> {
        serving.details(key, hooks: hooks, hints: hints)
    }
    /// Runs `hooks` around every later ``details(_:)``; plain reads never run hooks.
    public func addHooks(_ hooks: any FlagHook...) { serving.hooks.add(hooks) }
    /// The same, untyped: the raw value, or nil where a key's default applies.
    public func flagDetails(_ name: String, nameHash: Int) -> FlagDetails<FlagValue?> {
        serving.flagDetails(name, nameHash: nameHash)
    }
    /// The snapshot served now (``FlagSnapshot/empty`` when the context has none stored).
    public var snapshot: FlagSnapshot { serving.snapshot }
    /// Always `READY`: a fallback serves what it has.
    public var status: ProviderStatus { serving.status }
    /// Whether the kill switch is on: in the served snapshot, or held on the device.
    public var isKillSwitchActive: Bool { serving.isKillSwitchActive }
    /// Changes of served values (after ``identify(_:)``).
    public func changes() -> AsyncStream<FlagChange> { serving.publisher.changes.subscribe() }
    /// Load results, kill-switch flips and value changes, starting with recent history.
    public func events() -> AsyncStream<FlagEvent> { serving.publisher.events.subscribe() }
    /// Reports unknown list members, once per flag until its values change.
    public func noteUnknownValues(_ values: [String], in flag: String) { serving.noteUnknownValues(values, in: flag) }
    /// The most recent events (up to 32), oldest first: for debug screens and diagnostics.
    public var recentEvents: [FlagEvent] { serving.publisher.recentEvents }
    /// Sends a ``FlagEvent/tracked(_:)`` event with the served context to event subscribers.
    public func track(_ eventName: String, value: Double?, attributes: [String: FlagValue]) {
        serving.track(eventName, value: value, attributes: attributes)
    }

    /// Serves what the store holds for `context` now (else defaults, never another context's); no I/O.
    public func identify(_ context: EvaluationContext) {
        let answer = LastKnownGoodReader.answer(
            for: context, fingerprint: context.fingerprint, in: store, base: serving.base, checkedBy: policy, merge: merge, at: serving.clock())
        for event in (answer.problem.map { [$0] } ?? []) + answer.tamperedEvents(settingAside: { _ in nil }) { serving.publisher.emit(event) }
        serving.serve(
            answer.prepared, source: answer.source, reasonOverride: answer.prepared.reasonOnDevice(at: serving.clock()), held: answer.held,
            context: context)
    }

    /// Ends the change and event streams. Idempotent.
    public func shutdown() { serving.publisher.finish() }
}
