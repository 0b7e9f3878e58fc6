public import Foundation

/// The offline client: serves one context's Last-Known-Good from a ``LastKnownGoodStore``
/// over the bundled defaults, and never fetches. What an app extension, a widget or a
/// command-line tool injects when the app's provider does the fetching:
///
/// ```swift
/// let flags = FallbackClient(store: LastKnownGoodStore(fileURL: sharedContainerFile), context: user)
/// let model = WidgetModel(flags: flags)
/// ```
///
/// Values report source `fallback` and reason `CACHED` — `STALE` when they were past their TTL
/// as the client served them (at its creation, and at each ``identify(_:)``) — with bundled and
/// code defaults beneath. The status is `READY` once created: a fallback serves what it has.
/// Problems found loading the store (an unusable file, unreadable bundled defaults) are
/// events, never failures. Given the app's endpoints (`endpoints:`, and `trustedKeys:` from
/// FeatureFlagsSigning), it reads the file as the app's provider reads it offline: flagd rules
/// held on the device evaluated for its context, and with trusted keys only what a trusted key
/// signed.
public final class FallbackClient: FeatureFlagClient {
    /// The store read from.
    public let store: LastKnownGoodStore
    /// The overrides this client carries, if any.
    public let overrides: FlagOverrides?
    /// How the file is read (held rules, trusted keys), when the app's endpoints were given.
    private let policy: DevicePolicy?
    /// How a merged identity's members are merged when it is made again from them.
    private let merge: ContextMerge
    private let serving: FlagServing
    private let overridesObserver: Int?

    /// Serves the store's snapshot for `context` — or, when `context` is nil, for the most
    /// recently used context — over `bundledDefaults`.
    /// - Parameters:
    ///   - killSwitchKey: the flag whose `true` forces every read to its safe default.
    ///   - overrides: values testers force on this device, over the stored ones and beneath
    ///     the kill switch.
    ///   - exposures: report each context's first read of each flag as an exposure event.
    ///   - eventContext: how much of the context exposure and tracking events carry.
    ///   - endpoints: the app's endpoints, so that the file is read as the app's provider reads
    ///     it offline: flag rules held for evaluation on the device (flagd) are evaluated for the
    ///     context. With trusted keys (the `trustedKeys:` initialisers of FeatureFlagsSigning)
    ///     only what a trusted key signed is served — otherwise bundled and code defaults, and a
    ///     `fallback_tampered` event says why. This client never fetches, nor writes the file.
    ///     Empty (the default): the stored snapshots are served as the app wrote them.
    ///   - merge: with `endpoints`, how a merged identity (`ContextMerge.identity(of:)` given as
    ///     `context`) is made again from its members — each evaluated from held rules, or each
    ///     member's signed answer checked — as the app's provider does: give the provider's
    ///     `Configuration.merge`. Default: `ContextMerge()` (top tier wins for every flag).
    ///   - now: the clock used for ages and TTLs.
    public convenience init(
        store: LastKnownGoodStore, context: EvaluationContext? = nil, bundledDefaults: BundledDefaults = .none,
        killSwitchKey: String = "kill_switch", overrides: FlagOverrides? = nil, exposures: Bool = false,
        eventContext: EventContextDetail = .fingerprint, endpoints: [FlagEndpoint] = [], merge: ContextMerge = ContextMerge(),
        now: @escaping @Sendable () -> Date = coarseWallClockNow
    ) {
        self.init(
            store: store, context: context, bundledDefaults: bundledDefaults, killSwitchKey: killSwitchKey, overrides: overrides,
            exposures: exposures, eventContext: eventContext, endpoints: endpoints, trust: nil, merge: merge, now: now)
    }

    /// The designated initialiser: ``init(store:context:bundledDefaults:killSwitchKey:overrides:exposures:eventContext:endpoints:merge:now:)``
    /// with the signing keys stored answers must verify with (FeatureFlagsSigning passes them).
    package init(
        store: LastKnownGoodStore, context: EvaluationContext?, bundledDefaults: BundledDefaults, killSwitchKey: String,
        overrides: FlagOverrides?, exposures: Bool, eventContext: EventContextDetail, endpoints: [FlagEndpoint],
        trust: SignatureTrust?, merge: ContextMerge, now: @escaping @Sendable () -> Date
    ) {
        self.store = store
        self.overrides = overrides
        policy = endpoints.isEmpty && trust == nil ? nil : DevicePolicy(trust: trust?.verifier, endpoints: endpoints)
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

    /// Loads the store at `fileURL` (see ``LastKnownGoodStore/init(fileURL:capacity:)``) and
    /// serves it as ``init(store:context:bundledDefaults:killSwitchKey:overrides:exposures:eventContext:endpoints:merge:now:)`` does.
    public convenience init(
        fileURL: URL = LastKnownGoodStore.defaultFileURL(), context: EvaluationContext? = nil,
        bundledDefaults: BundledDefaults = .none, killSwitchKey: String = "kill_switch", overrides: FlagOverrides? = nil,
        endpoints: [FlagEndpoint] = [], merge: ContextMerge = ContextMerge(), now: @escaping @Sendable () -> Date = coarseWallClockNow
    ) {
        self.init(
            store: LastKnownGoodStore(fileURL: fileURL), context: context, bundledDefaults: bundledDefaults,
            killSwitchKey: killSwitchKey, overrides: overrides, endpoints: endpoints, merge: merge, now: now)
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
    /// Runs `hooks` around every ``details(_:)`` from now on, after those added before
    /// (see ``FlagHook``). Plain reads never run hooks.
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
    /// Load results, kill-switch flips and value changes; a new stream first receives the
    /// recent history, so problems found at load are never missed.
    public func events() -> AsyncStream<FlagEvent> { serving.publisher.events.subscribe() }
    /// Reports unknown list members as ``FlagEvent/unknownValues(flag:values:)``, once per
    /// flag until its values change.
    public func noteUnknownValues(_ values: [String], in flag: String) { serving.noteUnknownValues(values, in: flag) }
    /// The most recent events (up to 32), oldest first: for debug screens and diagnostics.
    public var recentEvents: [FlagEvent] { serving.publisher.recentEvents }
    /// Sends a ``FlagEvent/tracked(_:)`` event with the served context to event subscribers.
    public func track(_ eventName: String, value: Double?, attributes: [String: FlagValue]) {
        serving.track(eventName, value: value, attributes: attributes)
    }

    /// Serves what the store holds for `context` now — its Last-Known-Good, or, when it has
    /// none, the bundled and code defaults, never another context's values. Identifying the
    /// same context again picks up what the store saved since. No disk I/O. Read as at creation.
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
