import Foundation

extension FeatureFlagProvider {
    /// How the provider polls and backs off, what lies beneath the fetched values, how it
    /// validates payloads and merges contexts, and where its events go.
    public struct Configuration: Sendable {
        /// The shortest poll interval accepted; shorter requests are raised to it.
        public static let minimumPollInterval = Duration.seconds(30)

        /// Time between polls. Default 5 minutes; never below ``minimumPollInterval``.
        public var pollInterval: Duration {
            didSet { pollInterval = max(pollInterval, Self.minimumPollInterval) }
        }
        /// Each poll interval is drawn from `pollInterval × (1 ± jitter)`. Default 0.1, at most 0.5.
        public var jitter: Double {
            didSet { jitter = min(max(jitter, 0), 0.5) }
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
        /// the same events as an `AsyncSequence`.
        public var eventHandler: (@Sendable (FlagEvent) -> Void)?

        /// A configuration.
        public init(
            pollInterval: Duration = .seconds(300), jitter: Double = 0.1, initialBackoff: Duration = .seconds(1),
            maximumRetryAfter: Duration = .seconds(86_400), killSwitchKey: String = "kill_switch",
            bundledDefaults: BundledDefaults = .none, schema: FlagSchema? = nil, merge: ContextMerge = ContextMerge(),
            eventHandler: (@Sendable (FlagEvent) -> Void)? = nil
        ) {
            self.pollInterval = max(pollInterval, Self.minimumPollInterval)
            self.jitter = min(max(jitter, 0), 0.5)
            self.initialBackoff = initialBackoff
            self.maximumRetryAfter = maximumRetryAfter
            self.killSwitchKey = killSwitchKey
            self.bundledDefaults = bundledDefaults
            self.schema = schema
            self.merge = merge
            self.eventHandler = eventHandler
        }

        /// The backoff schedule: from ``initialBackoff`` doubling up to the poll interval.
        var backoff: Backoff { Backoff(initial: initialBackoff, multiplier: 2, maximum: pollInterval) }
    }
}
