/// How much of the evaluation context exposure and tracking events carry (attribute values only with ``attributes``).
public enum EventContextDetail: String, Sendable, Hashable, CaseIterable {
    /// The context's opaque ``EvaluationContext/fingerprint`` only (the default).
    case fingerprint
    /// The fingerprint and the targeting key (usually a user id).
    case targetingKey
    /// The fingerprint, the targeting key and every attribute value.
    case attributes
}

/// The evaluation context as much as the client's ``EventContextDetail`` lets an event show.
struct EventContext: Sendable, Hashable {
    /// The context's opaque fingerprint: joins events of one context without naming it.
    let fingerprint: String
    /// The targeting key, with ``EventContextDetail/targetingKey`` or ``EventContextDetail/attributes``.
    let targetingKey: String?
    /// The attributes, with ``EventContextDetail/attributes`` only.
    let attributes: [String: FlagValue]?

}

extension EventContext {
    /// `context` as much as `detail` allows.
    init(_ context: EvaluationContext, detail: EventContextDetail) {
        self.init(
            fingerprint: context.fingerprint, targetingKey: detail == .fingerprint ? nil : context.targetingKey,
            attributes: detail == .attributes ? context.attributes : nil)
    }
}

/// What a context was served the first time it read a flag this session; once per context, flag and value.
public struct FlagExposure: Sendable, Hashable {
    /// The flag's name.
    public let flag: String
    /// The value served (a killed or missing flag is never an exposure).
    public let value: FlagValue?
    /// The variant, when the service names one.
    public let variant: String?
    /// Why the value was chosen.
    public let reason: FlagReason
    /// Where it came from: `network`, `fallback` or `bundled_defaults`.
    public let source: FlagSource
    /// Who read it.
    let context: EventContext

    /// The reading context's opaque fingerprint: joins events of one context without naming it.
    public var contextFingerprint: String { context.fingerprint }
    /// The reading context's targeting key, with ``EventContextDetail/targetingKey`` or ``EventContextDetail/attributes``.
    public var targetingKey: String? { context.targetingKey }
    /// The reading context's attributes, with ``EventContextDetail/attributes`` only.
    public var contextAttributes: [String: FlagValue]? { context.attributes }
}

/// An event the app tracked with ``FeatureFlagClient/track(_:value:attributes:)``, with its context.
public struct FlagTrackingEvent: Sendable, Hashable {
    /// The event's name, e.g. `checkout_completed`.
    public let name: String
    /// A number that goes with it (an amount, a duration), if any.
    public let value: Double?
    /// What the app attached to it. The app chooses these; they are sent as given.
    public let attributes: [String: FlagValue]
    /// Who did it.
    let context: EventContext

    /// The tracking context's opaque fingerprint: joins events of one context without naming it.
    public var contextFingerprint: String { context.fingerprint }
    /// The tracking context's targeting key, with ``EventContextDetail/targetingKey`` or ``EventContextDetail/attributes``.
    public var targetingKey: String? { context.targetingKey }
    /// The tracking context's attributes, with ``EventContextDetail/attributes`` only.
    public var contextAttributes: [String: FlagValue]? { context.attributes }

    /// A tracking event in `context`, shown as much as `detail` allows (for testing event handlers).
    public init(
        name: String, value: Double?, attributes: [String: FlagValue], context: EvaluationContext,
        detail: EventContextDetail = .fingerprint
    ) {
        self.init(name: name, value: value, attributes: attributes, context: EventContext(context, detail: detail))
    }

    init(name: String, value: Double?, attributes: [String: FlagValue], context: EventContext) {
        self.name = name
        self.value = value
        self.attributes = attributes
        self.context = context
    }
}
