import Foundation

/// Everything a ``FeatureFlagProvider`` decides with, under one lock; changed only by ``apply(_:at:)``,
/// a pure transition whose effects run after unlocking. Readers see it published whole.
struct ProviderState: ServesValues {
    /// Called once with the outcome of the fetch a ``FeatureFlagProvider/refresh()`` joined.
    typealias FetchWaiter = @Sendable (FetchOutcome) -> Void
    /// Called once when a wait is over.
    typealias Resume = @Sendable () -> Void

    /// What never changes after the start, held by reference so copying the state stays cheap.
    private final class Fixed: Sendable {
        let configuration: FeatureFlagProvider.Configuration
        let base: ServingBase
        init(configuration: FeatureFlagProvider.Configuration, base: ServingBase) {
            self.configuration = configuration
            self.base = base
        }
    }
    private let fixed: Fixed
    /// The provider's configuration (poll interval, backoff, schema, merging).
    var configuration: FeatureFlagProvider.Configuration { fixed.configuration }
    /// The bundled defaults and the kill-switch key.
    var base: ServingBase { fixed.base }

    /// The identity served: the context itself, or for merged contexts their merged identity.
    var context: EvaluationContext
    /// The contexts fetched for it, highest tier first (one, unless merged).
    var members: [EvaluationContext]
    /// Bumped by every identify: the one place where an answer is recognised as outdated.
    var generation = 0
    /// What readers see.
    var served: ServedState

    /// Whether a network path exists, as last reported.
    var pathUp: Bool
    /// Consecutive failed fetches.
    var failures = 0
    /// No request before this instant (a `Retry-After`).
    var retryNotBefore: Duration?
    /// The last failure, cleared when the service answers.
    var lastError: FetchError?
    /// Credentials were refused (or plain HTTP was): no more requests.
    var fatal = false
    /// The jitter source.
    var random: JitterSource

    /// The fetch in flight, if any: at most one, always for the current generation.
    var flight: Flight?
    /// The last ticket issued.
    var lastTicket = 0
    /// Validation memory per member context (fingerprint): the last payload judged.
    var memory: [String: PayloadGate.Memory] = [:]
    /// How many payloads the schema checked (remembered payloads are not checked again).
    var validations = 0

    /// Whether ``FeatureFlagProvider/run()`` is running.
    var running = false
    /// A wake-up asked ``FeatureFlagProvider/run()`` to fetch, not only to reschedule its timer.
    var fetchRequested = false
    /// The run loop's sleep between polls.
    var runLoopSleep = Sleep()
    /// The poll the run loop's last plan set (on the provider's clock); nil when none is planned.
    var plannedPoll: Duration?
    /// The run loop woke for an expiry before ``plannedPoll``: its next plan keeps that poll.
    var keepsPlannedPoll = false
    /// The crash-loop guard's wait, in the background, for the app to change state.
    var healthSleep = Sleep()
    /// The registration with ``FeatureFlagProvider/Configuration/overrides``, ended on deinit.
    var overridesObserver: Int?
    /// Whether the provider was shut down.
    var shutDown = false
    /// Callers of ``FeatureFlagProvider/waitUntilReady(timeout:)`` waiting for a settled status.
    var settleWaiters: [Int: Resume] = [:]
    /// Change streams, the app's lifecycle and the fetches they ask for.
    var streams: StreamState
    /// Set while the crash-loop guard keeps this launch in safe mode.
    var safeMode: SafeModeStart?
    /// The crash-loop guard's launch journal as this launch holds it.
    var journal = LaunchJournal()
    /// The overrides the app's testers set; served (``ServedState/overrides``) except in safe mode.
    var overrides: OverrideLayer?

    /// Who sleeps until a wake-up, and a wake-up pending while nobody slept.
    struct Sleep: Sendable {
        /// The sleeper, named by the id it chose.
        var sleeper: (id: Int, resume: Resume)?
        /// Woken with nobody asleep.
        var pending = false

        /// Wakes the sleeper, or the next one to sleep: the resumption to run, if anyone sleeps.
        mutating func wake() -> [Resume] {
            guard let sleeper else {
                pending = true
                return []
            }
            self.sleeper = nil
            return [sleeper.resume]
        }

        /// `resume` sleeps under `id`; returns it at once if a wake-up is pending, else any replaced sleeper.
        mutating func register(id: Int, resume: @escaping Resume) -> [Resume] {
            if pending {
                pending = false
                return [resume]
            }
            defer { sleeper = (id, resume) }
            return sleeper.map { [$0.resume] } ?? []
        }

        /// The sleeper `id` stops sleeping: its resumption, if it still sleeps.
        mutating func stop(id: Int) -> [Resume] {
            guard let current = sleeper, current.id == id else { return [] }
            sleeper = nil
            return [current.resume]
        }
    }

    /// Which of the provider's sleeps an input names.
    enum Sleeper: Sendable {
        /// The run loop between polls (woken to fetch, or to compute its deadline again).
        case runLoop
        /// The crash-loop guard's automatic healthy mark, waiting for the app to change state.
        case healthTimer
    }

    /// What ``FeatureFlagProvider/run()`` does next after a fetch.
    enum NextPoll: Sendable, Equatable {
        /// Return: shut down, or stopped after a fatal error.
        case stop
        /// Sleep until the deadline on the provider's clock (nil: until a wake-up).
        case sleep(until: Duration?)
    }

    /// A fetch in flight.
    struct Flight: Sendable {
        let ticket: FetchTicket
        /// Every ``FeatureFlagProvider/refresh()`` that joined it.
        var waiters: [FetchWaiter]
        /// The task running it, once launched.
        var task: Task<Void, Never>?
        /// It spanned a trip to the background: a failure may be a suspension, not the service.
        var spannedBackground = false
    }

    /// What the change streams and the lifecycle left to do.
    struct StreamState: Sendable {
        /// The streams the last full answer advertised (or the store held); nil: unknown, fetch unconditionally.
        var advertised: [EventStreamLink]?
        /// ``advertised`` came from the store and no full answer confirmed it yet.
        var restored = false
        /// A stream opened in this process.
        var openedOnce = false
        /// The launch fetch, held until a restored stream opens or ``launchStreamWait`` passes.
        var deferred: FetchPlan?
        /// The streams the provider was told to keep open.
        var open: [EventStreamLink] = []
        /// Whether the app is in the foreground.
        var foreground: Bool
        /// Names the pending background close; bumped to call it off.
        var inactivityToken = 0
        /// Closed after a stretch in the background: the next fetch is unconditional.
        var closedForInactivity = false
        /// A stream asked for a fetch while one was in flight: fetch again when it ends.
        var queued: FetchTrigger?
        /// When the service last answered (provider clock).
        var lastAnswer: Duration?
        /// A fetch that spanned the background failed: fetch again on return to the foreground.
        var fetchOnForeground = false
    }

    /// A provider state serving `served` for `context`.
    init(
        context: EvaluationContext, served: ServedState, pathUp: Bool, foreground: Bool = true,
        configuration: FeatureFlagProvider.Configuration, base: ServingBase, random: any RandomNumberGenerator & Sendable
    ) {
        // Launched in the background: no stream until the foreground, whose first fetch is unconditional.
        self.streams = StreamState(foreground: foreground, closedForInactivity: !foreground)
        self.context = context
        self.members = [context]
        self.served = served
        self.pathUp = pathUp
        self.fixed = Fixed(configuration: configuration, base: base)
        self.random = JitterSource(random)
    }

    /// Whether `status` ends a wait for readiness.
    static func isSettled(_ status: ProviderStatus) -> Bool { status != .notReady && status != .reconciling }

    /// Why no request may be sent now, or nil.
    func skipReason(at now: Duration) -> String? {
        if shutDown { return "shut down" }
        if fatal { return "stopped after a fatal error" }
        if !pathUp { return "no network path" }
        if let notBefore = retryNotBefore, now < notBefore { return "waiting for Retry-After" }
        return nil
    }
}

/// Identifies one fetch: the generation it was started for and its number.
struct FetchTicket: Hashable, Sendable {
    let generation: Int
    let id: Int
}

/// When a transition happens: on the provider's clock (schedules) and on the wall clock (ages).
struct ProviderTime: Sendable {
    /// Time since the provider started, on its injected clock.
    let elapsed: Duration
    /// The wall-clock date.
    var date: Date { Date(timeIntervalSinceReferenceDate: dateSeconds) }
    /// Seconds since the reference date: a stored `Date` has no fixed layout (`Support/FixedLayout.swift`).
    private let dateSeconds: TimeInterval

    init(elapsed: Duration, date: Date) {
        self.elapsed = elapsed
        self.dateSeconds = date.timeIntervalSinceReferenceDate
    }
}

/// What a fetch needs to know, handed out when it starts.
struct FetchPlan: Sendable {
    let ticket: FetchTicket
    /// The identity fetched for.
    let context: EvaluationContext
    /// The contexts to fetch, highest tier first.
    let members: [EvaluationContext]
    /// The validation memory of each member at the start.
    let memory: [String: PayloadGate.Memory]
    /// Why it is fetched: a stream's metadata, or an unconditional resume.
    var trigger: FetchTrigger = .ask
}

/// What started a fetch.
enum FetchTrigger: Sendable, Equatable {
    /// A caller, the poll timer, an identify: conditional on the stored tag.
    case ask
    /// A change stream's event (with its metadata) or a (re)connection (nil).
    case stream(RefetchHint?)
    /// First fetch, or back from long inactivity: no `If-None-Match`, no stream metadata (OFREP ADR-0008).
    case unconditional
    /// Values a stream carried for `endpoint`: read as a fetched answer, without a request.
    case streamed([String: FlagValue], endpoint: String?)

    /// Whether the stored tag may be sent.
    var conditional: Bool { self != .unconditional }
    /// The stream metadata to send.
    var hint: RefetchHint? {
        if case .stream(let hint) = self { return hint }
        return nil
    }
}

/// What a fetch came to: for one member (`Values` is its snapshot), then for the fetch as a
/// whole, judged, merged and prepared outside the state's lock (`Values` is ``PreparedSnapshot``).
indirect enum FetchVerdict<Values: Sendable>: Sendable {
    /// New values the schema accepted, with their tag, unknown keys and the change streams they
    /// advertised (empty: none; the streams open are closed).
    case fresh(Values, etag: EntityTag?, unknownKeys: [String], streams: [EventStreamLink])
    /// The service confirmed what is held (a 304): serve it again, fetched now.
    case confirmed(Values)
    /// Payloads that broke the schema (now or, for a 304 to a rejected payload's tag, before).
    case rejected([PayloadGate.Rejection])
    /// The request failed.
    case failed(FetchError)
    /// The fetch was cancelled (identify, path down, shutdown).
    case cancelled
}

/// What a fetch reports when it ends.
struct FetchReport: Sendable {
    let ticket: FetchTicket
    let verdict: FetchVerdict<PreparedSnapshot>
    /// The members' validation memory after judging.
    let memory: [String: PayloadGate.Memory?]
    /// How many payloads the schema checked.
    let validations: Int
    /// For a merged identity whose fetch succeeded: each member's snapshot and tag, to keep.
    let members: [String: StoredFlags]?
    /// From start to answer.
    let latency: Duration
    /// Events the fetch's answers call for whatever the verdict: a set's failed or rejected services, disagreements.
    var notes: [FlagEvent] = []
    /// Why some services of a set serve their held values while the others' values are fresh (status `ERROR`).
    var partial: String?
}

/// Something that happens to a provider.
indirect enum ProviderInput: Sendable {
    /// Serve another identity from `lastKnownGood` (in safe mode, its healthy snapshot instead).
    case identify(EvaluationContext, members: [EvaluationContext], lastKnownGood: PreparedSnapshot, source: FlagSource, problem: FlagEvent?)
    /// A caller wants fresh values: start a fetch, join the one in flight, or say why not.
    case refresh(pathUp: Bool, waiter: ProviderState.FetchWaiter)
    /// The task of a started fetch exists now.
    case launched(FetchTicket, Task<Void, Never>)
    /// A fetch ended.
    case fetchEnded(FetchReport)
    /// The network path went down or came back.
    case pathChanged(Bool)
    /// A read met unknown list members of `flag`.
    case unknownValues(flag: String, values: [String])
    /// Subscribers were told that values changed: unknown list members may be reported again.
    case valuesPublished
    /// Wait until the status settles (id chosen by the caller).
    case awaitSettled(id: Int, resume: ProviderState.Resume)
    /// Stop waiting (timeout or cancellation).
    case stopWaiting(id: Int)
    /// Stop for good.
    case shutdown
    /// ``FeatureFlagProvider/run()`` started (`true`; refused while another runs or after shutdown) or returned.
    case running(Bool, answer: (@Sendable (Bool) -> Void)? = nil)
    /// ``FeatureFlagProvider/run()`` fetched: `answer` gets what it does next (jitter drawn here).
    case planNextPoll(after: FetchOutcome, answer: @Sendable (ProviderState.NextPoll) -> Void)
    /// A sleeper waits (id chosen by the caller); resumed at once if already woken, or after shutdown.
    case sleep(ProviderState.Sleeper, id: Int, resume: ProviderState.Resume)
    /// The sleeper stops waiting (its task was cancelled, or its timer came first).
    case stopSleeping(ProviderState.Sleeper, id: Int)
    /// ``FeatureFlagProvider/run()`` woke: `answer` gets whether to fetch now (a wake-up asked, or
    /// `timerDue` while in the foreground with a path); the request is cleared.
    case takeFetchRequest(timerDue: Bool, answer: @Sendable (Bool) -> Void)
    /// A change stream connected, said flags changed, or closed.
    case stream(EventStreamLink, ChangeStream.Signal)
    /// The app came to the foreground (`true`) or went to the background.
    case lifecycle(foreground: Bool)
    /// The background grace named by the token is over.
    case inactivityElapsed(token: Int)
    /// The wait for a restored stream to open before the launch fetch is over.
    case streamWaitElapsed(FetchTicket)
    /// The overrides changed (nil: none left); `observer`, once, names the provider's registration.
    case overrides(OverrideLayer?, observer: Int? = nil)
    /// The launch is healthy; `answer` gets `false` in safe mode when `held` is not for the current context.
    case markHealthy(automatic: Bool, held: HeldAnswer?, for: String, answer: @Sendable (Bool) -> Void)
}

/// What a transition asks the provider to do after unlocking, in order.
indirect enum ProviderEffect: Sendable {
    /// Tell subscribers which values changed between the two.
    case publish(from: ServedState, to: ServedState)
    /// Send an event.
    case emit(FlagEvent)
    /// Start a fetch task for the plan, then report it with ``ProviderInput/launched(_:_:)``.
    case startFetch(FetchPlan)
    /// Cancel a task.
    case cancel(Task<Void, Never>)
    /// Answer these refresh callers at once.
    case answer([ProviderState.FetchWaiter], FetchOutcome)
    /// Resume a waiter.
    case resume(ProviderState.Resume)
    /// Wake ``FeatureFlagProvider/run()`` to fetch (if not asleep, its next sleep returns at once).
    case wake([ProviderState.Resume])
    /// Keep a merged identity's member snapshots in the store (memory only).
    case keepMembers([String: StoredFlags], of: EvaluationContext)
    /// Hold the kill switch on the device (nil releases it); written by the fetch's task.
    case holdKill(KillHold?)
    /// Write to the Last-Known-Good store, on the fetch's task, before ``complete(_:_:latency:)``.
    case persist(FlagSnapshot, etag: EntityTag?, streams: [EventStreamLink]?, for: EvaluationContext)
    /// Report the fetch (unless `latency` is nil) and answer its callers; an `updated` outcome
    /// takes its keys from the preceding ``publish(from:to:)``.
    case complete([ProviderState.FetchWaiter], FetchOutcome, latency: Duration?)
    /// Stop the fetcher and the path monitor, end the streams.
    case stop
    /// Keep exactly these change streams open (closing the others).
    case setStreams([EventStreamLink])
    /// After `delay`, report ``ProviderInput/inactivityElapsed(token:)``.
    case scheduleInactivity(token: Int, after: Duration)
    /// After `delay`, report ``ProviderInput/streamWaitElapsed(_:)``.
    case scheduleStreamWait(FetchTicket, after: Duration)
    /// Wake ``FeatureFlagProvider/run()`` only to reschedule its timer, and the crash-loop guard's wait.
    case reschedule([ProviderState.Resume])
    /// Write the launch journal (it holds the snapshot healthy for the context).
    case writeJournal(LaunchJournal)
}
