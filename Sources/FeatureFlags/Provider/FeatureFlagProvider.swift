public import Foundation

/// The client an app injects: serves the Last-Known-Good at once, fetches within the fetcher's
/// budget, polls, follows reachability, re-fetches on context changes, applies the kill switch.
///
/// ``status``: `NOT_READY` until a fetch succeeds (`READY`); `ERROR` after a failure or with no
/// path (`STALE` past the TTL); `FATAL` on 401/403 or refused plain HTTP (no more requests);
/// `RECONCILING` from ``identify(_:)`` until its fetch ends.
public final class FeatureFlagProvider: FeatureFlagClient {
    /// Polling, backoff, validation, merging, the kill-switch key and the bundled defaults.
    public let configuration: Configuration

    /// The one lock around all provider state; reads see its served part without locking.
    let cell: ServingCell<ProviderState>
    /// Keeps effects (events, change notifications) in transition order; readers never take it.
    let order = Locked(())
    let base: ServingBase
    let publisher: FlagPublisher
    let fetcher: FlagFetcher
    let store: LastKnownGoodStore
    let reachability: any Reachability
    let lifecycle: any AppLifecycle
    /// The change streams open now.
    let streamSet: StreamSet
    let clock: any ElapsedClock
    let wallClock: @Sendable () -> Date
    /// Disk writes happen here, never on Swift's cooperative threads.
    let io = DispatchQueue(label: "FeatureFlags.FeatureFlagProvider.io")
    /// Holds a fetch from just before its answer is served until its writes reach the disk.
    let fetchWrites = DispatchGroup()
    /// The hooks run around ``details(_:)``.
    let hooks: FlagHooks
    /// Names this provider and its flag service to hooks (built only when hooks run).
    var metadata: String {
        "FeatureFlagProvider/" + fetcher.endpoints.map(\.name).joined(separator: "+")
    }

    /// A provider for `context`, serving the store's Last-Known-Good at once (else the defaults).
    /// - Parameters:
    ///   - reachability: nil uses the system's; always reachable when every endpoint is this machine.
    ///   - lifecycle: nil uses the system's; "always in the foreground" where there is none (Linux).
    public convenience init(
        context: EvaluationContext,
        fetcher: FlagFetcher,
        store: LastKnownGoodStore,
        configuration: Configuration = Configuration(),
        reachability: (any Reachability)? = nil,
        lifecycle: (any AppLifecycle)? = nil,
        clock: any Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = coarseWallClockNow,
        random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
    ) {
        // The work is in the unspecialisable initialiser below: one copy in the binary.
        self.init(
            context: context, fetcher: fetcher, store: store, configuration: configuration, reachability: reachability,
            lifecycle: lifecycle, elapsed: makeElapsedClock(clock), now: now, random: random)
    }

    // Not specialised for a concrete clock either (binary size).
    @inline(never) @_semantics("optimize.sil.specialize.generic.never")
    private init(
        context: EvaluationContext, fetcher: FlagFetcher, store: LastKnownGoodStore, configuration: Configuration,
        reachability: (any Reachability)?, lifecycle: (any AppLifecycle)?, elapsed: any ElapsedClock,
        now: @escaping @Sendable () -> Date, random: any RandomNumberGenerator & Sendable
    ) {
        // The guard's journal lives beside the store's file: a memory-only store runs without it.
        var configuration = configuration
        let guardOff = !store.persists && configuration.crashLoopGuard != nil
        if guardOff { configuration.crashLoopGuard = nil }
        self.configuration = configuration
        self.fetcher = fetcher
        self.store = store
        self.reachability = reachability ?? SystemReachability.make()
        self.lifecycle = lifecycle ?? SystemAppLifecycle.make()
        var streamConfiguration = ChangeStream.Configuration()
        streamConfiguration.heartbeatDeadline = configuration.heartbeatDeadline
        streamConfiguration.backoff = configuration.streamBackoff
        streamConfiguration.allowInsecureHTTP = fetcher.configuration.allowInsecureHTTP
        streamConfiguration.clock = elapsed
        streamSet = StreamSet(
            configuration: streamConfiguration, sameOriginHeaders: fetcher.configuration.headers,
            maxValueBytes: fetcher.configuration.maxResponseBytes)
        self.clock = elapsed
        self.wallClock = now
        let publisher = FlagPublisher(handler: configuration.eventHandler)
        self.publisher = publisher
        let hookClock: any ElapsedClock = elapsed.isSystemClock ? CoarseElapsedClock() : elapsed
        hooks = FlagHooks(configuration.hooks, timeLimit: configuration.hookTimeLimit, clock: hookClock) { publisher.emit($0) }
        let reader = LastKnownGoodReader(
            store: store, bundledDefaults: configuration.bundledDefaults, killSwitchKey: configuration.killSwitchKey)
        base = reader.base
        // With trusted keys, what fails the check is set aside now, before anything is read.
        let answer = LastKnownGoodReader.answer(
            for: context, fingerprint: context.fingerprint, in: store, base: base, checkedBy: fetcher.policy, merge: configuration.merge, at: now())
        let tampered = answer.tamperedEvents { Self.setAside($0, in: store) }
        var (lastKnownGood, source, held) = (answer.prepared, answer.source, answer.held)
        var launchEvents: [FlagEvent] = answer.problem.map { [$0] } ?? []
        if lastKnownGood.killed || held { launchEvents.append(.killSwitch(active: true)) }
        // The crash-loop guard decides, before the first read, whether this launch is safe.
        var safe: SafeModeStart?
        var journal = LaunchJournal()
        if guardOff {
            launchEvents.append(.fallbackWarning(reason: "the crash-loop guard is off: the store keeps nothing on disk (LastKnownGoodStore.inMemory)"))
        }
        if let policy = configuration.crashLoopGuard {
            let (recorded, problem) = LaunchJournal.read(LaunchJournal.path(besides: store.fileURL))
            if let problem { launchEvents.append(.fallbackRejected(reason: problem, keptAt: nil)) }
            let stored = source == .fallback ? lastKnownGood.snapshot : nil
            let launch = policy.launch(recorded, fingerprint: context.fingerprint, lastKnownGood: stored)
            journal = launch.journal
            if let failure = launch.journal.save(besides: store) { launchEvents.append(failure) }
            if let start = launch.safe {
                safe = start
                lastKnownGood = base.prepare(start.healthy ?? .empty)
                source = start.healthy == nil ? .codeDefault : .fallback
                launchEvents.append(.safeModeEntered(reason: start.reason))
            }
        }
        var state = ProviderState(
            context: context,
            served: ServedState(
                lastKnownGood, source: source, status: .notReady, reasonOverride: lastKnownGood.reasonOnDevice(at: now()),
                held: held, context: context),
            // The path is first asked for when fetching: asking here would start the monitor early.
            pathUp: true, foreground: self.lifecycle.isForeground, configuration: configuration, base: base,
            random: random)
        state.safeMode = safe
        state.journal = journal
        // Stored stream URLs let the launch fetch be conditional; unused without `keepsStreamURLs`.
        if configuration.changeStreams, let links = store.lastKnownGood(for: context)?.streams,
            configuration.keepsStreamURLs || links.isEmpty
        {
            state.streams.advertised = fetcher.restoring(links, for: context)
            state.streams.restored = true
        }
        if let overrides = configuration.overrides {
            overrides.resync(killSwitchKey: base.killSwitchKey) { layer in
                state.overrides = layer
                if safe == nil { state.served.overrides = layer }
            }
            launchEvents += overrides.problemEvents
        }
        let exposures = configuration.exposures
            ? ExposureLog(detail: configuration.eventContext, base: base, now: now) { publisher.emit($0) } : nil
        cell = ServingCell(state, killSwitchKey: base.killSwitchKey, exposures: exposures)
        streamSet.connect { [weak self] signal, link in self?.transition(.stream(link, signal)) }
        if let overrides = configuration.overrides {
            let id = overrides.attach(killSwitchKey: base.killSwitchKey) { [weak self] layer in
                self?.transition(.overrides(layer))
            }
            // Resync: a change between the first look and the attachment reached no one.
            overrides.resync(killSwitchKey: base.killSwitchKey) { transition(.overrides($0, observer: id)) }
        }
        for event in tampered + reader.events + launchEvents { publisher.emit(event) }
    }

    deinit {
        if let observer = cell.inspect({ $0.overridesObserver }) { configuration.overrides?.detach(observer) }
    }

    // MARK: FeatureFlagClient

    /// The raw value of `name` (nil when missing, valueless or killed).
    public func flagValue(_ name: String) -> FlagValue? { cell.lookup(name) }

    /// The raw value of `name`, looked up by the hash its ``FlagKey`` computed.
    public func flagValue(_ name: String, nameHash: Int) -> FlagValue? { cell.lookup(name, hash: nameHash) }

    /// The value and where it came from; runs the provider's hooks around the read (see ``FlagHook``).
    public func details<Value>(_ key: FlagKey<Value>) -> FlagDetails<Value> {
        guard hooks.areIdle else { return details(key, hooks: [], hints: [:]) }
        return cell.details(key, base: base, now: wallClock()) { noteUnknownValues($0, in: $1) }
    }

    /// ``details(_:)`` between the provider's hooks and `hooks`, which get `hints`.
    public func details<Value>(_ key: FlagKey<Value>, hooks invocation: [any FlagHook], hints: [String: FlagValue]) -> FlagDetails<Value> {
        hooks.run(key, invocation: invocation, hints: hints, context: { cell.read { $0.served.context } }, provider: metadata) {
            cell.details(key, base: base, now: wallClock()) { noteUnknownValues($0, in: $1) }
        }
    }

    /// Runs `hooks` around every later ``details(_:)``, after those added before; plain reads never run hooks.
    public func addHooks(_ hooks: any FlagHook...) { self.hooks.add(hooks) }

    /// The untyped read and where it came from (the same sources as `details`), without hooks.
    public func flagDetails(_ name: String, nameHash: Int) -> FlagDetails<FlagValue?> {
        cell.flagDetails(name, hash: nameHash, base: base, now: wallClock())
    }

    /// The snapshot served now.
    public var snapshot: FlagSnapshot { cell.read { $0.served.prepared.snapshot } }
    /// The status now (see the type's documentation for the lifecycle).
    public var status: ProviderStatus { cell.read { $0.served.status } }
    /// Whether the kill switch is on.
    public var isKillSwitchActive: Bool { cell.read { $0.served.killed } }
    /// Why this launch is in safe mode (see ``CrashLoopGuard``), in one line; nil when it is not.
    public var safeMode: String? { cell.inspect { $0.safeMode?.reason } }
    /// Changes of served values.
    public func changes() -> AsyncStream<FlagChange> { publisher.changes.subscribe() }
    /// Lifecycle and diagnostics; a new stream first receives the last 32 events.
    public func events() -> AsyncStream<FlagEvent> { publisher.events.subscribe() }
    /// Reports unknown list members as ``FlagEvent/unknownValues(flag:values:)``, once per flag until it changes.
    public func noteUnknownValues(_ values: [String], in flag: String) {
        guard !values.isEmpty else { return }
        transition(.unknownValues(flag: flag, values: values))
    }
    /// The most recent events (up to 32), oldest first.
    public var recentEvents: [FlagEvent] { publisher.recentEvents }
    /// Sends a ``FlagEvent/tracked(_:)`` event with the served context; an empty name is ignored.
    public func track(_ eventName: String, value: Double?, attributes: [String: FlagValue]) {
        let detail = configuration.eventContext
        publisher.track(eventName, value: value, attributes: attributes, context: cell.read { EventContext(of: $0.served, detail: detail) })
    }

    // MARK: State

    /// The context being served (for merged contexts, their ``ContextMerge/identity(of:)``).
    public var context: EvaluationContext { cell.inspect { $0.context } }
    /// The contexts fetched for it, highest tier first: one, unless identified by ``identify(merging:)``.
    public var contexts: [EvaluationContext] { cell.inspect { $0.members } }
    /// The last fetch failure, cleared whenever the service answers (even with a rejected payload).
    public var lastError: FetchError? { cell.inspect { $0.lastError } }

    /// Status and labels, read together.
    package var labels: ServedLabels { cell.read { $0.served.labels } }
    /// Whether a fetch is in flight.
    package var isFetching: Bool { cell.inspect { $0.flight != nil } }
    /// The change streams open now (connected, connecting or waiting to reconnect).
    package var openStreamCount: Int { streamSet.count }

    // MARK: Crash-loop guard

    /// Says this launch is healthy: its values become the ones to fall back on, and safe mode ends.
    /// Does nothing without a ``Configuration/crashLoopGuard``. Never waits on the disk. Should
    /// `identify` calls land between its read and its change eight times in a row, it changes
    /// nothing (safe mode stays): call it again.
    public func markHealthy() {
        markHealthy(automatic: false)
    }

    /// Waits until values served and writes asked for so far reached the disk; blocks only on the I/O queue.
    package func waitForWrites() {
        fetchWrites.wait()
        io.sync {}
    }

    /// Waits until the events emitted so far reached the configuration's `eventHandler`.
    package func waitForEventHandler() {
        publisher.handler?.drain()
    }

    func markHealthy(automatic: Bool) {
        guard configuration.crashLoopGuard != nil else { return }
        // Asked off the lock; if an identify came between, the transition refuses it: ask again.
        for _ in 0..<8 {
            let (context, inSafeMode) = cell.inspect { ($0.context, $0.safeMode != nil) }
            let held = inSafeMode ? heldAnswer(for: context) : nil
            let taken = ask({ .markHealthy(automatic: automatic, held: held, for: context.fingerprint, answer: $0) }, unanswered: true)
            if taken { return }
        }
    }

    // MARK: Shutdown

    /// Stops everything (``run()`` returns, fetching and streams end); reads keep serving. Idempotent.
    public func shutdown() {
        transition(.shutdown)
    }
}
