public import Foundation

/// The client an app injects: it serves the Last-Known-Good at once, fetches from the flag
/// service within the fetcher's budget (2 s by default), polls, follows reachability,
/// re-fetches when the context changes, and applies the kill switch.
///
/// ```swift
/// let store = LastKnownGoodStore()                              // at launch, synchronous
/// let fetcher = FlagFetcher(endpoint: .json(post: url))
/// let provider = FeatureFlagProvider(context: user, fetcher: fetcher, store: store)
/// Task { await provider.run() }                                // polling, until cancelled
/// _ = await provider.waitUntilReady(timeout: .seconds(2))      // splash screen
/// ```
///
/// Lifecycle (``status``): `NOT_READY` while serving what the store had → `READY` after a
/// fetch succeeds; `ERROR` after a failure (or with no network path), `STALE` instead when
/// the served values are older than their TTL; `FATAL` on 401/403 or a refused plain-HTTP
/// URL, after which no request is sent; `RECONCILING` from ``identify(_:)`` until the new
/// context's fetch ends. Values come from the network when the status is `READY` (and from a
/// signed document past its expiry, `STALE`); otherwise from the Last-Known-Good (`fallback`),
/// the bundled defaults or the code defaults.
///
/// Inside, its decisions are one value (``ProviderState``) under one lock, changed only by its
/// pure transitions; events, change notifications, fetches and writes are the transitions'
/// effects, run after unlocking (see Docs/Architecture.md).
public final class FeatureFlagProvider: FeatureFlagClient {
    /// Polling, backoff, validation, merging, the kill-switch key and the bundled defaults.
    public let configuration: Configuration

    /// The one lock around all provider state; reads see its served part without locking.
    let cell: ServingCell<ProviderState>
    /// Orders transitions that run effects, so that their events and change notifications
    /// leave in the order the transitions happened. Readers never take it.
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
    /// A fetch is in it from just before its answer is served until its writes reached the
    /// disk: what ``waitForWrites()`` waits for besides the queue.
    let fetchWrites = DispatchGroup()
    /// The hooks run around ``details(_:)``.
    let hooks: FlagHooks
    /// Names this provider and its flag service to hooks (built only when hooks run).
    var metadata: String {
        "FeatureFlagProvider/" + fetcher.endpoints.map(\.name).joined(separator: "+")
    }

    /// A provider for `context`, serving the store's Last-Known-Good for it at once (or the
    /// bundled and code defaults when it has none).
    /// - Parameters:
    ///   - fetcher: how flags are fetched; its budget is the fetch budget.
    ///   - store: the Last-Known-Good store, read now and written after each new snapshot.
    ///   - reachability: the network path; nil (the default) is the system's: `NWPathMonitor`
    ///     on Apple platforms, netlink on Linux, "always reachable" elsewhere — and always
    ///     reachable when every endpoint asks this machine (`localhost`, `127.0.0.0/8`, `::1`):
    ///     a development server answers whether or not the machine has a network.
    ///   - lifecycle: foreground and background; nil (the default) is the system's: UIKit's,
    ///     WatchKit's or AppKit's notifications, "always in the foreground" elsewhere (Linux,
    ///     servers, tools).
    ///   - clock: schedules polls, backoff and `Retry-After` (inject a test clock in tests).
    ///   - now: wall-clock time for TTLs and ages.
    ///   - random: the jitter source.
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
        // The work is in the initialiser below, which takes no existential the optimiser could
        // specialise for the defaults: one copy of it in the binary instead of three.
        self.init(
            context: context, fetcher: fetcher, store: store, configuration: configuration, reachability: reachability,
            lifecycle: lifecycle, elapsed: makeElapsedClock(clock), now: now, random: JitterSource(random))
    }

    // Not specialised for a concrete clock either (the optimiser would otherwise copy this
    // initialiser for `ContinuousClock`).
    @inline(never) @_semantics("optimize.sil.specialize.generic.never")
    private init(
        context: EvaluationContext, fetcher: FlagFetcher, store: LastKnownGoodStore, configuration: Configuration,
        reachability: (any Reachability)?, lifecycle: (any AppLifecycle)?, elapsed: any ElapsedClock,
        now: @escaping @Sendable () -> Date, random: JitterSource
    ) {
        // The crash-loop guard keeps its journal in a file beside the store's: a store that
        // keeps nothing on disk runs without it (and says so below).
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
        // Hooks are timed on a coarse clock (cheap to read) unless a test injected a clock.
        let hookClock: any ElapsedClock = elapsed.isSystemClock ? CoarseElapsedClock() : elapsed
        hooks = FlagHooks(configuration.hooks, timeLimit: configuration.hookTimeLimit, clock: hookClock) { publisher.emit($0) }
        let reader = LastKnownGoodReader(
            store: store, bundledDefaults: configuration.bundledDefaults, killSwitchKey: configuration.killSwitchKey)
        base = reader.base
        // What may be served (the one decision: see `HeldAnswer`); with trusted keys, what
        // fails the check is set aside now, before anything is read.
        let answer = LastKnownGoodReader.answer(
            for: context, fingerprint: context.fingerprint, in: store, base: base, checkedBy: fetcher, merge: configuration.merge, at: now())
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
            let path = LaunchJournal.path(besides: store.fileURL)
            let (recorded, problem) = LaunchJournal.read(path)
            if let problem { launchEvents.append(.fallbackRejected(reason: problem, keptAt: nil)) }
            let stored = source == .fallback ? lastKnownGood.snapshot : nil
            let launch = policy.launch(recorded, fingerprint: context.fingerprint, lastKnownGood: stored)
            journal = launch.journal
            do {
                try launch.journal.write(to: path)
            } catch {
                launchEvents.append(.fallbackWriteFailed(reason: "the launch journal: \(error.description)"))
            }
            if let start = launch.safe {
                safe = start
                lastKnownGood = base.prepare(start.healthy ?? .empty)
                source = start.healthy == nil ? .codeDefault : .fallback
                launchEvents.append(.safeModeEntered(reason: start.info.reason))
            }
        }
        var state = ProviderState(
            context: context,
            served: ServedState(
                lastKnownGood, source: source, status: .notReady, reasonOverride: lastKnownGood.reasonOnDevice(at: now()),
                held: held, context: context),
            // The path is first asked for by `run()` or `refresh()`, which fetch: asking here
            // would start the monitor before the first read for nothing.
            pathUp: true, foreground: self.lifecycle.isForeground, configuration: configuration, base: base,
            random: random)
        state.safeMode = safe.map { ProviderState.SafeModeState(info: $0.info, crashDigest: $0.crashDigest) }
        state.journal = journal
        // What the last full answer for this context advertised, kept with its snapshot: the
        // launch fetch may then be conditional, and a 304 still opens the streams.
        // (Without `keepsStreamURLs`, URLs an earlier launch kept are not used: not known. The
        // file never holds an endpoint's own streams, so any link it holds is such a URL.)
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
        // Signals and override changes come back as transitions, through weak references.
        streamSet.connect(to: self)
        if let overrides = configuration.overrides {
            let (id, _) = overrides.attach(killSwitchKey: base.killSwitchKey) { [weak self] layer in
                self?.transition(.overrides(layer))
            }
            // A change made between the first look and the attachment reached no one: take the
            // overrides again (and keep the registration, to end it when the provider goes).
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

    /// The value and where it came from: `network` when `READY`, `fallback` (reason `CACHED`,
    /// or `STALE` past the TTL) otherwise, then bundled and code defaults, or the kill switch.
    /// Runs the provider's hooks around the read (see ``FlagHook``).
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

    /// Runs `hooks` around every ``details(_:)`` from now on, after those added before
    /// (see ``FlagHook``). Plain reads never run hooks.
    public func addHooks(_ hooks: any FlagHook...) { self.hooks.add(hooks) }

    /// The untyped read and where it came from: `network` when `READY`, `fallback` (reason
    /// `CACHED`, or `STALE` past the TTL) otherwise, then bundled and code defaults, or the kill switch.
    public func flagDetails(_ name: String, nameHash: Int) -> FlagDetails<FlagValue?> {
        cell.flagDetails(name, hash: nameHash, base: base, now: wallClock())
    }

    /// The snapshot served now.
    public var snapshot: FlagSnapshot { cell.read { $0.served.prepared.snapshot } }
    /// The status now (see the type's documentation for the lifecycle).
    public var status: ProviderStatus { cell.read { $0.served.status } }
    /// Whether the kill switch is on.
    public var isKillSwitchActive: Bool { cell.read { $0.served.killed } }
    /// Why this launch is in safe mode (see ``CrashLoopGuard``): one line saying how many
    /// launches in a row ended before the app was marked healthy and what is served instead;
    /// nil when it is not in safe mode.
    public var safeMode: String? { cell.inspect { $0.safeMode?.info.reason } }
    /// Changes of served values.
    public func changes() -> AsyncStream<FlagChange> { publisher.changes.subscribe() }
    /// Lifecycle and diagnostics; a new stream first receives the last 32 events.
    public func events() -> AsyncStream<FlagEvent> { publisher.events.subscribe() }
    /// Reports unknown list members as ``FlagEvent/unknownValues(flag:values:)``, once per
    /// flag until its values change.
    public func noteUnknownValues(_ values: [String], in flag: String) {
        guard !values.isEmpty else { return }
        transition(.unknownValues(flag: flag, values: values))
    }
    /// The most recent events (up to 32), oldest first.
    public var recentEvents: [FlagEvent] { publisher.recentEvents }
    /// Sends a ``FlagEvent/tracked(_:)`` event with the context being served (as much of it as
    /// ``Configuration/eventContext`` allows) to event subscribers and the event handler. An
    /// empty name is ignored.
    public func track(_ eventName: String, value: Double?, attributes: [String: FlagValue]) {
        let detail = configuration.eventContext
        publisher.track(eventName, value: value, attributes: attributes, context: cell.read { EventContext(of: $0.served, detail: detail) })
    }

    // MARK: State

    /// The context being served (for merged contexts, their ``ContextMerge/identity(of:)``).
    public var context: EvaluationContext { cell.inspect { $0.context } }
    /// The contexts fetched for it, highest tier first: one, unless identified by
    /// ``identify(merging:)``.
    public var contexts: [EvaluationContext] { cell.inspect { $0.members } }
    /// The last fetch failure, cleared whenever the service answers (with new values, a 304,
    /// or a payload the schema rejected).
    public var lastError: FetchError? { cell.inspect { $0.lastError } }

    /// Status and labels, read together.
    package var labels: ServedLabels { cell.read { $0.served.labels } }
    /// How many payloads the schema checked.
    var validationCount: Int { cell.inspect { $0.validations } }
    /// Whether a fetch is in flight.
    package var isFetching: Bool { cell.inspect { $0.flight != nil } }
    /// The change streams open now (connected, connecting or waiting to reconnect).
    package var openStreamCount: Int { streamSet.count }

    // MARK: Crash-loop guard

    /// Says that this launch is healthy (the first screen is up, the feature ran): the launch
    /// journal records the values the app runs under as the ones to fall back on, and the
    /// count of launches that never became healthy starts again. In safe mode it also ends
    /// safe mode and serves the stored values again. Does nothing without a
    /// ``Configuration/crashLoopGuard``. Never waits on the disk.
    public func markHealthy() {
        markHealthy(automatic: false)
    }

    /// Waits until the values served so far and the writes asked for so far (the launch
    /// journal's) reached the disk: for tools that exit right after ``markHealthy()``, or
    /// right after they saw a value change. A fetch's answer is served a moment before its
    /// write is queued; the fetch is counted from before it is served, so a value seen is a
    /// value waited for. Blocks only on the I/O queue (never on Swift's cooperative threads).
    package func waitForWrites() {
        fetchWrites.wait()
        io.sync {}
    }

    /// Waits until the events emitted so far reached the configuration's `eventHandler`: for
    /// tools that must tell the events before a moment from those after it.
    package func waitForEventHandler() {
        publisher.handler?.drain()
    }

    func markHealthy(automatic: Bool) {
        guard configuration.crashLoopGuard != nil else { return }
        // In safe mode, leaving it serves what may be served for the context — asked here, off
        // the lock, and handed to the transition with the context it is for: if an identify
        // came between, the transition refuses it and it is asked again.
        for _ in 0..<8 {
            let (context, inSafeMode) = cell.inspect { ($0.context, $0.safeMode != nil) }
            let held = inSafeMode ? heldAnswer(for: context) : nil
            let taken = ask({ .markHealthy(automatic: automatic, held: held, for: context.fingerprint, answer: $0) }, unanswered: true)
            if taken { return }
        }
    }

    // MARK: Shutdown

    /// Stops everything: ``run()`` returns, the fetch in flight is cancelled, the fetcher, the
    /// reachability monitor and every stream end. Reads keep working with the values last
    /// served. Idempotent.
    public func shutdown() {
        transition(.shutdown)
    }
}

extension FeatureFlagProvider: StreamSignalSink {
    func streamSignalled(_ signal: ChangeStream.Signal, from link: EventStreamLink) {
        transition(.stream(link, signal))
    }
}
