import Foundation

extension FeatureFlagProvider {
    /// How the provider polls and backs off, validates payloads, merges contexts and reports events.
    public struct Configuration: Sendable {
        /// The shortest poll interval accepted; shorter requests are raised to it.
        public static let minimumPollInterval = Duration.seconds(30)

        /// Time between polls. Default 5 minutes; never below ``minimumPollInterval``.
        public var pollInterval: Duration {
            didSet { pollInterval = max(pollInterval, Self.minimumPollInterval) }
        }
        /// Each poll interval is drawn from `pollInterval × (1 ± jitter)`. Default 0.1.
        public var jitter: Double
        /// The first failure's backoff ceiling; it doubles per failure up to the poll interval.
        public var initialBackoff: Duration
        /// The longest `Retry-After` honoured; longer values are cut to this.
        public var maximumRetryAfter: Duration
        /// Validation before activation (seed 000 §6.4): every fetched payload is checked
        /// against it; one that breaks it is rejected whole and the Last-Known-Good stays.
        /// Nil (the default) accepts every payload that decodes.
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
            maximumRetryAfter: Duration = .seconds(86_400), schema: FlagSchema? = nil, merge: ContextMerge = ContextMerge(),
            eventHandler: (@Sendable (FlagEvent) -> Void)? = nil
        ) {
            self.pollInterval = max(pollInterval, Self.minimumPollInterval)
            self.jitter = min(max(jitter, 0), 0.5)
            self.initialBackoff = initialBackoff
            self.maximumRetryAfter = maximumRetryAfter
            self.schema = schema
            self.merge = merge
            self.eventHandler = eventHandler
        }

        /// The backoff schedule: from ``initialBackoff`` doubling up to the poll interval.
        public var backoff: Backoff { Backoff(initial: initialBackoff, multiplier: 2, maximum: pollInterval) }
    }

    /// What one fetch attempt came to.
    public enum FetchOutcome: Sendable, Equatable {
        /// A new snapshot was activated; these keys changed.
        case updated(Set<String>)
        /// The service confirmed the current values (304 or the same content).
        case unchanged
        /// The fetch failed; the Last-Known-Good stays.
        case failed(FetchError)
        /// The payload broke the schema and was rejected whole; the Last-Known-Good stays.
        case rejected([FlagViolation])
        /// The answer was for a context that is no longer current, and was dropped.
        case discarded
        /// No request was sent: no network path, a `Retry-After` still running, a fatal
        /// error earlier, or the provider shut down.
        case skipped(String)
    }
}

/// Where a provider's values come from now.
public enum ProviderMode: String, Sendable, Equatable {
    /// The last fetch succeeded: values are the service's.
    case online
    /// Offline, failing or not fetched yet: values are the Last-Known-Good (or defaults).
    case fallback
}
