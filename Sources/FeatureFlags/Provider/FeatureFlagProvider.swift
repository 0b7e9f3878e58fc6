import Foundation

/// The client an app injects: it serves the Last-Known-Good at once, fetches from the flag
/// service within the online client's deadline (2 s by default), polls, follows
/// reachability, re-fetches when the context changes, and applies the kill switch.
///
/// ```swift
/// let fallback = FallbackClient(context: user)                 // at launch, synchronous
/// let provider = FeatureFlagProvider(context: user, online: online, fallback: fallback)
/// Task { await provider.run() }                               // polling, until cancelled
/// _ = await provider.waitUntilReady(timeout: .seconds(2))     // splash screen
/// ```
///
/// Lifecycle (``status``): `NOT_READY` while serving what the fallback had → `READY` after a
/// fetch succeeds; `ERROR` after a failure (or with no network path), `STALE` instead when
/// the served values are older than their TTL; `FATAL` on 401/403 or a refused plain-HTTP
/// URL, after which no request is sent; `RECONCILING` from ``identify(_:)`` until the new
/// context's fetch ends.
public final class FeatureFlagProvider: FeatureFlagClient {
    struct State {
        /// The identity served: the context itself, or for merged contexts their
        /// ``ContextMerge/identity(of:)``.
        var context: EvaluationContext
        /// The contexts fetched for it, highest tier first (one, unless merged).
        var members: [EvaluationContext]
        /// Merged identities only: each member's last accepted snapshot, by fingerprint, to
        /// merge with when the member answers 304.
        var memberSnapshots: [String: FlagSnapshot] = [:]
        var generation = 0
        var pathUp: Bool
        var failures = 0
        var retryNotBefore: Duration?
        var lastError: FetchError?
        var inFlight: (generation: Int, id: Int, task: Task<FetchOutcome, Never>)?
        var nextFetchID = 0
        var running = false
        var fatal = false
        var shutDown = false
    }

    /// The online client (its deadline is the fetch budget).
    public let online: OnlineClient
    /// The Last-Known-Good store beneath.
    public let fallback: FallbackClient
    /// The network path monitor.
    public let reachability: any Reachability
    /// Polling and backoff.
    public let configuration: Configuration

    let serving: FlagServing
    let state: Locked<State>
    /// Validation before activation, with memory of payloads judged.
    let gate: PayloadGate
    /// Orders identify against activations, so an answer for an old context never lands.
    let activation = Locked(())
    let clock: any ElapsedClock
    let wallClock: @Sendable () -> Date
    let random: Locked<any RandomNumberGenerator & Sendable>
    let wakeup = Wakeup()
    let statusWaiters = Locked<[CheckedContinuation<Void, Never>]>([])
    /// Disk writes happen here, never on Swift's global executor.
    let io = DispatchQueue(label: "FeatureFlags.FeatureFlagProvider.io")

    /// A provider for `context`, serving `fallback`'s Last-Known-Good for it at once.
    /// - Parameters:
    ///   - reachability: the path monitor; ``SystemReachability/make()`` by default.
    ///   - clock: schedules polls, backoff and `Retry-After` (inject a test clock in tests).
    ///   - now: wall-clock time for TTLs and ages.
    ///   - random: the jitter source.
    public init(
        context: EvaluationContext,
        online: OnlineClient,
        fallback: FallbackClient,
        reachability: any Reachability = SystemReachability.make(),
        configuration: Configuration = Configuration(),
        clock: any Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = { Date() },
        random: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator()
    ) {
        self.online = online
        self.fallback = fallback
        self.reachability = reachability
        self.configuration = configuration
        self.clock = makeElapsedClock(clock)
        self.wallClock = now
        self.random = Locked(random)
        let lkg = fallback.currentContextFingerprint == context.fingerprint
            ? fallback.storedSnapshot(for: context) : fallback.select(context)
        online.setETag(lkg?.etag, for: context)
        state = Locked(State(context: context, members: [context], pathUp: reachability.isReachable))
        gate = PayloadGate(schema: configuration.schema, killSwitchKey: fallback.killSwitchKey)
        serving = FlagServing(
            snapshot: lkg?.servedFrom(.fallback) ?? .empty, defaults: fallback.bundledDefaults, status: .notReady,
            reasonOverride: .cached, killSwitchKey: fallback.killSwitchKey, now: now,
            eventHandler: configuration.eventHandler)
        // What the fallback found at load (rejected file, bad bundled defaults) is the
        // provider's news too; its own READY is not: the provider is not ready yet.
        for event in fallback.recentEvents where event != .ready && event != .killSwitch(active: true) {
            serving.emit(event)
        }
        if serving.isKillSwitchActive { serving.emit(.killSwitch(active: true)) }
    }

    // MARK: FeatureFlagClient

    /// The raw value of `name` (nil when missing, valueless or killed).
    public func flagValue(_ name: String) -> FlagValue? { serving.lookup(name) }
    /// The value and where it came from: `network` when online, `fallback` (reason `CACHED`,
    /// or `STALE` past the TTL) otherwise, then bundled and code defaults, or the kill switch.
    public func details<Value>(_ key: FlagKey<Value>) -> FlagDetails<Value> { serving.details(key) }
    /// The snapshot served now.
    public var snapshot: FlagSnapshot { serving.snapshot }
    /// The status now (see the type's documentation for the lifecycle).
    public var status: ProviderStatus { serving.status }
    /// Whether the kill switch is on.
    public var isKillSwitchActive: Bool { serving.isKillSwitchActive }
    /// Changes of served values.
    public func changes() -> AsyncStream<FlagChange> { serving.changeBroadcaster.subscribe() }
    /// Lifecycle and diagnostics; a new stream first receives the last 32 events.
    public func events() -> AsyncStream<FlagEvent> { serving.eventBroadcaster.subscribe() }
    /// Reports unknown list members as ``FlagEvent/unknownValues(flag:values:)``, once per
    /// flag until its values change.
    public func noteUnknownValues(_ values: [String], in flag: String) { serving.noteUnknownValues(values, in: flag) }
    /// The most recent events (up to 32), oldest first.
    public var recentEvents: [FlagEvent] { serving.eventBroadcaster.history }

    // MARK: State

    /// The context being served (for merged contexts, their ``ContextMerge/identity(of:)``).
    public var context: EvaluationContext { state.withLock { $0.context } }
    /// The contexts fetched for it, highest tier first: one, unless identified by
    /// ``identify(merging:)``.
    public var contexts: [EvaluationContext] { state.withLock { $0.members } }
    /// Whether values come from the service now or from the fallback: `online` exactly when
    /// the status is `READY` (derived from it, so the two can never disagree).
    public var mode: ProviderMode { serving.status == .ready ? .online : .fallback }
    /// The last fetch failure, cleared by a success.
    public var lastError: FetchError? { state.withLock { $0.lastError } }
    /// Consecutive failed fetches.
    public var consecutiveFailures: Int { state.withLock { $0.failures } }

    // MARK: Identify

    /// Switches to `context`: serves its Last-Known-Good at once (code and bundled defaults
    /// if it has none — never the previous context's values), status `RECONCILING`, and wakes
    /// ``run()`` to fetch for it. Answers still on their way for earlier contexts are dropped.
    /// Calling it with the current context does nothing.
    public func identify(_ context: EvaluationContext) {
        switchIdentity(to: context, members: [context])
    }

    /// Switches to several contexts at once — a partner's Personal and Business plans (seeds
    /// 001 and 002): each is fetched, and their flags are merged per key by
    /// ``Configuration/merge`` (top tier wins, union, maximum, any…) into the one snapshot
    /// served. A kill switch in any of them applies. Like ``identify(_:)`` otherwise: the
    /// merged identity's Last-Known-Good is served at once and persisted after each fetch,
    /// so an offline relaunch that identifies the same contexts finds it. One context (after
    /// removing duplicates) is the same as ``identify(_:)``; none does nothing.
    public func identify(merging contexts: [EvaluationContext]) {
        let ranked = configuration.merge.ranked(contexts)
        guard let first = ranked.first else { return }
        if ranked.count == 1 { return identify(first) }
        switchIdentity(to: ContextMerge.identity(of: ranked), members: ranked)
    }

    private func switchIdentity(to context: EvaluationContext, members: [EvaluationContext]) {
        var superseded: Task<FetchOutcome, Never>?
        let switched: Bool = activation.withLock { _ in
            let accepted = state.withLock { s -> Bool in
                guard s.context != context, !s.shutDown else { return false }
                s.context = context
                s.members = members
                s.memberSnapshots = [:]
                s.generation += 1
                superseded = s.inFlight?.task
                s.inFlight = nil
                return true
            }
            guard accepted else { return false }
            gate.forget(allBut: Set(members.map(\.fingerprint)))
            let lkg = fallback.select(context)
            if members.count == 1 {
                online.setETag(lkg?.etag, for: context)
            } else {
                // Member snapshots are not kept across identities: ask each in full.
                for member in members { online.setETag(nil, for: member) }
            }
            serving.activate(lkg?.servedFrom(.fallback) ?? .empty, status: .reconciling, reasonOverride: .cached)
            serving.emit(.reconciling)
            return true
        }
        guard switched else { return }
        superseded?.cancel()
        wakeup.fire()
    }

    // MARK: Shutdown

    /// Stops everything: ``run()`` returns, the fetch in flight is cancelled, the online
    /// client, the reachability monitor and every stream end. Reads keep working with the
    /// values last served. Idempotent.
    public func shutdown() {
        let inFlight: Task<FetchOutcome, Never>?? = state.withLock { s in
            if s.shutDown { return nil }
            s.shutDown = true
            defer { s.inFlight = nil }
            return .some(s.inFlight?.task)
        }
        guard let inFlight else { return }
        inFlight?.cancel()
        wakeup.fire()
        online.shutdown()
        reachability.stop()
        notifyStatusWaiters(force: true)
        serving.finish()
        fallback.shutdown()
    }
}
