import Foundation

extension FeatureFlagProvider {
    /// How the provider polls and backs off, what lies beneath the fetched values, how it
    /// validates payloads and merges contexts, and where its events go.
    public struct Configuration: Sendable {
        /// The shortest poll interval accepted; shorter requests are raised to it.
        public static let minimumPollInterval = Duration.seconds(30)

        /// Time between polls. Default 5 minutes; never below ``minimumPollInterval``, and
        /// never above 2³² seconds (about 136 years: an interval that long never polls).
        public var pollInterval: Duration {
            didSet { pollInterval = Self.boundedPollInterval(pollInterval) }
        }
        /// Each poll interval is drawn from `pollInterval × (1 ± jitter)`. Default 0.1, at most
        /// 0.5; NaN is 0.
        public var jitter: Double {
            didSet { jitter = Self.boundedJitter(jitter) }
        }
        /// The first failure's backoff ceiling; it doubles per failure up to the poll interval.
        public var initialBackoff: Duration
        /// The longest `Retry-After` honoured; longer values are cut to this.
        public var maximumRetryAfter: Duration
        /// The flag whose `true` forces every read to its key's default (the kill switch).
        /// Default `kill_switch`.
        public var killSwitchKey: String
        /// Defaults shipped with the app, beneath every snapshot. Default none.
        public var bundledDefaults: BundledDefaults
        /// Validation before activation: every fetched payload is checked against it; one that
        /// breaks it is rejected whole and the Last-Known-Good stays. Nil (the default) accepts
        /// every payload that decodes.
        public var schema: FlagSchema?
        /// How contexts given to ``FeatureFlagProvider/identify(merging:)`` are ranked and merged.
        public var merge: ContextMerge
        /// Called with every event, in order, on a private serial queue (a hook for logging
        /// and metrics; see ``FlagEvent/metric``). ``FeatureFlagProvider/events()`` delivers
        /// the same events as an `AsyncSequence`. At most 1,024 events wait for a handler that
        /// falls behind; past that the oldest are dropped and the handler next hears
        /// ``FlagEvent/eventsDropped(count:)``.
        public var eventHandler: (@Sendable (FlagEvent) -> Void)?
        /// Open the change streams a service advertises (OFREP `eventStreams`) and fetch when
        /// they say flags changed. Default on. Polling continues beside them as the safety net.
        /// While on, a fetch is unconditional (no `If-None-Match`) until the streams are known:
        /// a 304 carries no body, hence no stream advertisement (see ``keepsStreamURLs``).
        public var changeStreams: Bool
        /// Keep the stream URLs an answer advertised in the fallback file with its snapshot, so
        /// that a launch against an unchanged service is one conditional request (a 304) that
        /// still opens its streams. Default on — a deviation from OFREP ADR-0008, which says a
        /// stream URL (it may carry a token) must not be persisted; the file is app-private.
        /// Off: only whether streams were advertised is kept; a launch after an answer that
        /// advertised streams fetches in full to learn them (and once more, conditionally, when
        /// a stream opens), and URLs an earlier launch kept are not used and are dropped at the
        /// next full answer. Streams an endpoint opens itself (LaunchDarkly's) are never stored.
        public var keepsStreamURLs = true
        /// A change stream that receives no byte at all (events and heartbeat comments alike)
        /// for this long is taken as half-open, closed and reconnected. Default 45 s (the
        /// development server sends a heartbeat every 15 s); the initialiser keeps it within
        /// 10 ms and 2³² seconds, and the stream bounds a value set later the same way.
        public var heartbeatDeadline: Duration
        /// Coming to the foreground fetches at once when the last answer is older than this.
        /// Default 60 s.
        public var foregroundRefreshAge: Duration
        /// How long streams stay open after the app goes to the background (at most the
        /// stream's `inactivityDelaySec`). Default 10 s; polling stops at once.
        public var backgroundStreamGrace: Duration
        /// Record launches and start in safe mode after a crash loop (see ``CrashLoopGuard``).
        /// Default nil (off): turn it on in apps, not in tools that never mark themselves healthy.
        public var crashLoopGuard: CrashLoopGuard?
        /// Values testers force on this device (a debug menu, UI tests), over the fetched ones
        /// and beneath the kill switch; ignored in safe mode. Default nil: no overrides.
        public var overrides: FlagOverrides?
        /// Hooks run around every ``FeatureFlagProvider/details(_:)`` (see ``FlagHook``); more
        /// can be added with ``FeatureFlagProvider/addHooks(_:)``. Plain reads never run hooks.
        public var hooks: [any FlagHook] = []
        /// A hook whose stage takes longer than this is disabled for the provider's life and
        /// reported. Default 50 ms.
        public var hookTimeLimit: Duration = FlagHooks.defaultTimeLimit
        /// Report the first read of each flag by each context as a ``FlagEvent/exposure(_:)``
        /// event (for experiment analysis). Default off; plain reads then pay nothing for it.
        public var exposures = false
        /// How much of the context exposure and ``FeatureFlagProvider/track(_:value:attributes:)``
        /// events carry. Default ``EventContextDetail/fingerprint``: no attribute values.
        public var eventContext = EventContextDetail.fingerprint

        /// A configuration.
        public init(
            pollInterval: Duration = .seconds(300), jitter: Double = 0.1, initialBackoff: Duration = .seconds(1),
            maximumRetryAfter: Duration = .seconds(86_400), killSwitchKey: String = "kill_switch",
            bundledDefaults: BundledDefaults = .none, schema: FlagSchema? = nil, merge: ContextMerge = ContextMerge(),
            eventHandler: (@Sendable (FlagEvent) -> Void)? = nil, changeStreams: Bool = true,
            heartbeatDeadline: Duration = .seconds(45), foregroundRefreshAge: Duration = .seconds(60),
            backgroundStreamGrace: Duration = .seconds(10), crashLoopGuard: CrashLoopGuard? = nil,
            overrides: FlagOverrides? = nil
        ) {
            self.pollInterval = Self.boundedPollInterval(pollInterval)
            self.jitter = Self.boundedJitter(jitter)
            self.initialBackoff = initialBackoff
            self.maximumRetryAfter = maximumRetryAfter
            self.killSwitchKey = killSwitchKey
            self.bundledDefaults = bundledDefaults
            self.schema = schema
            self.merge = merge
            self.eventHandler = eventHandler
            self.changeStreams = changeStreams
            self.heartbeatDeadline = min(max(heartbeatDeadline, .milliseconds(10)), .longestWait)
            self.foregroundRefreshAge = foregroundRefreshAge
            self.backgroundStreamGrace = backgroundStreamGrace
            self.crashLoopGuard = crashLoopGuard
            self.overrides = overrides
        }

        /// `jitter` within `0...0.5`; NaN (which no range may hold: drawing from it traps) is 0.
        private static func boundedJitter(_ jitter: Double) -> Double {
            jitter.isNaN ? 0 : min(max(jitter, 0), 0.5)
        }

        /// `interval` within `minimumPollInterval...Duration.longestWait`: jitter scales it and the
        /// run loop adds it to the clock, which a longer one would overflow.
        private static func boundedPollInterval(_ interval: Duration) -> Duration {
            min(max(interval, minimumPollInterval), .longestWait)
        }

        /// Reconnection delays of the change streams (full jitter). Tests shorten them.
        var streamBackoff = Backoff(initial: .seconds(1), maximum: .seconds(60))

        /// The backoff schedule: from ``initialBackoff`` doubling up to the poll interval.
        var backoff: Backoff { Backoff(initial: initialBackoff, multiplier: 2, maximum: pollInterval) }
    }
}
