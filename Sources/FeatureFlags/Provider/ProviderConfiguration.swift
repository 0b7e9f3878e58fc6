import Foundation

extension FeatureFlagProvider {
    /// How the provider polls and backs off, validates, merges contexts, and where its events go.
    public struct Configuration: Sendable {
        /// The shortest poll interval accepted; shorter requests are raised to it.
        public static let minimumPollInterval = Duration.seconds(30)

        /// Time between polls. Default 5 minutes; at least ``minimumPollInterval``, at most 2³² seconds.
        public var pollInterval: Duration {
            didSet { pollInterval = Self.boundedPollInterval(pollInterval) }
        }
        /// Each interval is drawn from `pollInterval × (1 ± jitter)`. Default 0.1, at most 0.5; NaN is 0.
        public var jitter: Double {
            didSet { jitter = Self.boundedJitter(jitter) }
        }
        /// The first failure's backoff ceiling; it doubles per failure up to the poll interval.
        public var initialBackoff: Duration
        /// The longest `Retry-After` honoured; longer values are cut to this.
        public var maximumRetryAfter: Duration
        /// The flag whose `true` forces every read to its key's default. Default `kill_switch`.
        public var killSwitchKey: String
        /// Defaults shipped with the app, beneath every snapshot. Default none.
        public var bundledDefaults: BundledDefaults
        /// Checked against every fetched payload; one that breaks it is rejected whole and the
        /// Last-Known-Good stays. Nil (the default) accepts every payload that decodes.
        public var schema: FlagSchema?
        /// How contexts given to ``FeatureFlagProvider/identify(merging:)`` are ranked and merged.
        public var merge: ContextMerge
        /// Called with every event, in order, on a private serial queue. At most 1,024 events wait for
        /// a slow handler; then the oldest are dropped and it hears ``FlagEvent/eventsDropped(count:)``.
        public var eventHandler: (@Sendable (FlagEvent) -> Void)?
        /// Open the change streams a service advertises (OFREP `eventStreams`); polling continues beside
        /// them. Default on. While on, fetches are unconditional until the streams are known.
        public var changeStreams: Bool
        /// Keep advertised stream URLs in the fallback file, so an unchanged service's launch is one 304
        /// that still opens its streams. Default on — a deviation from OFREP ADR-0008 (a stream URL may
        /// carry a token and must not be persisted); the file is app-private. Off: launches fetch in full.
        public var keepsStreamURLs = true
        /// A stream silent this long is taken as half-open and reconnected. Default 45 s (10 ms to 2³² s).
        public var heartbeatDeadline: Duration
        /// Coming to the foreground fetches at once when the last answer is older than this. Default 60 s.
        public var foregroundRefreshAge: Duration
        /// How long streams stay open in the background (at most `inactivityDelaySec`). Default 10 s.
        public var backgroundStreamGrace: Duration
        /// Start in safe mode after a crash loop (see ``CrashLoopGuard``). Default nil (off); for apps, not tools.
        public var crashLoopGuard: CrashLoopGuard?
        /// Values testers force on this device, over fetched ones and beneath the kill switch; ignored in safe mode.
        public var overrides: (any FlagOverrideSource)?
        /// Hooks run around every ``FeatureFlagProvider/details(_:)`` (see ``FlagHook``); plain reads never run them.
        public var hooks: [any FlagHook] = []
        /// A hook stage slower than this disables the hook for the provider's life (reported). Default 50 ms.
        public var hookTimeLimit: Duration = FlagHooks.defaultTimeLimit
        /// Report each context's first read of each flag as ``FlagEvent/exposure(_:)``. Default off (then free).
        public var exposures = false
        /// How much of the context exposure and tracked events carry. Default ``EventContextDetail/fingerprint``.
        public var eventContext = EventContextDetail.fingerprint

        /// A configuration.
        public init(
            pollInterval: Duration = .seconds(300), jitter: Double = 0.1, initialBackoff: Duration = .seconds(1),
            maximumRetryAfter: Duration = .seconds(86_400), killSwitchKey: String = "kill_switch",
            bundledDefaults: BundledDefaults = .none, schema: FlagSchema? = nil, merge: ContextMerge = ContextMerge(),
            eventHandler: (@Sendable (FlagEvent) -> Void)? = nil, changeStreams: Bool = true,
            heartbeatDeadline: Duration = .seconds(45), foregroundRefreshAge: Duration = .seconds(60),
            backgroundStreamGrace: Duration = .seconds(10), crashLoopGuard: CrashLoopGuard? = nil,
            overrides: (any FlagOverrideSource)? = nil
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

        /// `interval` within `minimumPollInterval...Duration.longestWait`, so clock arithmetic cannot overflow.
        private static func boundedPollInterval(_ interval: Duration) -> Duration {
            min(max(interval, minimumPollInterval), .longestWait)
        }

        /// Reconnection delays of the change streams (full jitter). Tests shorten them.
        var streamBackoff = Backoff(initial: .seconds(1), maximum: .seconds(60))

        /// The backoff schedule: from ``initialBackoff`` doubling up to the poll interval.
        var backoff: Backoff { Backoff(initial: initialBackoff, multiplier: 2, maximum: pollInterval) }
    }
}
