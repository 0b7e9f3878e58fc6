public import Foundation

/// Something a client wants the app to know: OpenFeature lifecycle plus diagnostics, never context values or credentials.
/// New kinds may come in any release: switch on ``kind`` with a `default:` and read details through the properties.
public struct FlagEvent: Sendable, Equatable, CustomStringConvertible {
    /// A kind of event. New kinds may be added in any release.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, e.g. `fetch_failed`.
        public let name: String
        /// The OpenFeature event name of a lifecycle kind.
        let openFeatureName: String?
        private init(_ name: String, openFeature: String? = nil) {
            self.name = name
            self.openFeatureName = openFeature
        }

        /// The client can serve evaluated values (PROVIDER_READY).
        public static let ready = Kind("ready", openFeature: "PROVIDER_READY")
        /// Flags' values changed (PROVIDER_CONFIGURATION_CHANGED).
        public static let configurationChanged = Kind("configuration_changed", openFeature: "PROVIDER_CONFIGURATION_CHANGED")
        /// Values are older than their TTL and refreshing failed (PROVIDER_STALE).
        public static let stale = Kind("stale", openFeature: "PROVIDER_STALE")
        /// Something failed; the client keeps serving what it had (PROVIDER_ERROR).
        public static let error = Kind("error", openFeature: "PROVIDER_ERROR")
        /// The context changed; values for it are on their way (PROVIDER_RECONCILING).
        public static let reconciling = Kind("reconciling", openFeature: "PROVIDER_RECONCILING")
        /// Values for the new context are in place (PROVIDER_CONTEXT_CHANGED).
        public static let contextChanged = Kind("context_changed", openFeature: "PROVIDER_CONTEXT_CHANGED")
        /// The fallback file was read.
        public static let fallbackLoaded = Kind("fallback_loaded")
        /// The fallback file, or a snapshot in it, could not be used.
        public static let fallbackRejected = Kind("fallback_rejected")
        /// Persisting a snapshot failed.
        public static let fallbackWriteFailed = Kind("fallback_write_failed")
        /// With trusted keys, a stored snapshot was not what a trusted key signed: set aside.
        public static let fallbackTampered = Kind("fallback_tampered")
        /// The fallback file was used, but who may change it deserves attention.
        public static let fallbackWarning = Kind("fallback_warning")
        /// The kill switch turned on or off.
        public static let killSwitch = Kind("kill_switch")
        /// A fetched snapshot was activated.
        public static let activated = Kind("activated")
        /// A fetch failed.
        public static let fetchFailed = Kind("fetch_failed")
        /// A fetch ended, whatever it came to.
        public static let fetchCompleted = Kind("fetch_completed")
        /// A fetched payload broke the schema and was rejected whole.
        public static let payloadRejected = Kind("payload_rejected")
        /// An answer was not a document a trusted key signed; nothing of it was read.
        public static let signatureRejected = Kind("signature_rejected")
        /// An accepted payload holds flags the schema does not know.
        public static let unknownKeys = Kind("unknown_keys")
        /// A read met list members the app's enum does not know.
        public static let unknownValues = Kind("unknown_values")
        /// A change stream connected (again).
        public static let streamOpened = Kind("stream_opened")
        /// A change stream ended or could not connect; polling carries on.
        public static let streamClosed = Kind("stream_closed")
        /// A change stream said flags changed; a fetch follows.
        public static let changeNotified = Kind("change_notified")
        /// The crash-loop guard started this launch in safe mode.
        public static let safeModeEntered = Kind("safe_mode_entered")
        /// The provider left safe mode.
        public static let safeModeLeft = Kind("safe_mode_left")
        /// The overrides file or the launch overrides could not be used (see ``FlagOverrideSource``).
        public static let overridesRejected = Kind("overrides_rejected")
        /// A hook's stage threw (reported once per hook and stage).
        public static let hookFailed = Kind("hook_failed")
        /// A hook took longer than the time limit and is not run again by this client.
        public static let hookDisabled = Kind("hook_disabled")
        /// A context read a flag for the first time this session (when exposures are on).
        public static let exposure = Kind("exposure")
        /// The app tracked an event.
        public static let tracked = Kind("tracked")
        /// An event handler or an `events()` stream fell behind and missed events (see ``FlagEvent/eventsDropped(count:)``).
        public static let eventsDropped = Kind("events_dropped")
        /// Under ``ServiceStrategy/comparison(answering:)`` the services answered a flag differently.
        public static let servicesDisagree = Kind("services_disagree")

        /// The name.
        public var description: String { name }

        /// Kinds are the same when their names are.
        public static func == (lhs: Kind, rhs: Kind) -> Bool { lhs.name == rhs.name }
        /// Hashes the name.
        public func hash(into hasher: inout Hasher) { hasher.combine(name) }
    }

    /// What the event says besides its kind: its factory fills the fields its kind has.
    struct Details: Sendable, Equatable {
        var keys: Set<String>?
        var errorCode: FlagErrorCode?
        var message: String?
        var fetchError: FetchError?
        var outcome: FetchOutcome?
        var latencyMilliseconds: Int?
        var version: String?
        var age: TimeInterval?
        var active: Bool?
        var violations: [FlagViolation]?
        var fingerprint: String?
        var flag: String?
        var values: [String]?
        var contexts: Int?
        var bytes: Int?
        var keptAt: String?
        var stream: String?
        var via: String?
        var etag: String?
        var retryInMilliseconds: Int?
        var hook: String?
        var stage: String?
        var elapsedMilliseconds: Int?
        var exposure: FlagExposure?
        var tracking: FlagTrackingEvent?
        var dropped: Int?
        var serviceValues: [String: FlagValue]?
    }

    /// Boxed: an event is two words wherever it is copied.
    private indirect enum Box: Sendable, Equatable { case details(Details) }

    /// The kind of event.
    public let kind: Kind
    private let box: Box

    /// The details.
    var details: Details {
        switch box { case .details(let details): return details }
    }

    private init(_ kind: Kind, _ details: Details = Details()) {
        self.kind = kind
        self.box = .details(details)
    }

    /// The client can serve evaluated values (PROVIDER_READY).
    public static let ready = FlagEvent(.ready)
    /// These flags' effective values changed (PROVIDER_CONFIGURATION_CHANGED).
    public static func configurationChanged(keys: Set<String>) -> FlagEvent { FlagEvent(.configurationChanged, Details(keys: keys)) }
    /// Values are `age` s old, past their TTL, and refreshing failed (PROVIDER_STALE); negative: the clock was set back.
    public static func stale(age: TimeInterval) -> FlagEvent { FlagEvent(.stale, Details(age: age)) }
    /// Something failed; the client keeps serving what it had (PROVIDER_ERROR).
    public static func error(_ code: FlagErrorCode, message: String) -> FlagEvent { FlagEvent(.error, Details(errorCode: code, message: message)) }
    /// The context changed; values for it are on their way (PROVIDER_RECONCILING).
    public static let reconciling = FlagEvent(.reconciling)
    /// Values for the new context are in place (PROVIDER_CONTEXT_CHANGED).
    public static let contextChanged = FlagEvent(.contextChanged)
    /// The fallback file was read: how many contexts it holds and its size.
    public static func fallbackLoaded(contexts: Int, bytes: Int) -> FlagEvent { FlagEvent(.fallbackLoaded, Details(contexts: contexts, bytes: bytes)) }
    /// The fallback file (or a snapshot in it) could not be used; `keptAt` is where the file was moved, if it was.
    public static func fallbackRejected(reason: String, keptAt: String?) -> FlagEvent {
        FlagEvent(.fallbackRejected, Details(message: reason, keptAt: keptAt))
    }
    /// A stored snapshot was not what a trusted key signed: removed, not served; the file was copied to `keptAt`.
    public static func fallbackTampered(reason: String, keptAt: String?) -> FlagEvent {
        FlagEvent(.fallbackTampered, Details(message: reason, keptAt: keptAt))
    }
    /// Persisting a snapshot failed; the values served are unaffected.
    public static func fallbackWriteFailed(reason: String) -> FlagEvent { FlagEvent(.fallbackWriteFailed, Details(message: reason)) }
    /// The fallback file was used, but another user owns it or others may write it (and so decide the flags).
    public static func fallbackWarning(reason: String) -> FlagEvent { FlagEvent(.fallbackWarning, Details(message: reason)) }
    /// The kill switch turned on (every read returns its safe default) or off.
    public static func killSwitch(active: Bool) -> FlagEvent { FlagEvent(.killSwitch, Details(active: active)) }
    /// A fetched snapshot was activated, with the fetch latency.
    public static func activated(version: String?, latencyMilliseconds: Int) -> FlagEvent {
        FlagEvent(.activated, Details(latencyMilliseconds: latencyMilliseconds, version: version))
    }
    /// A fetch failed; the Last-Known-Good stays.
    public static func fetchFailed(_ error: FetchError) -> FlagEvent {
        FlagEvent(.fetchFailed, Details(errorCode: error.errorCode, message: error.description, fetchError: error))
    }
    /// A fetch ended: how long it took and what it came to (not sent for answers to an outdated context).
    public static func fetchCompleted(latencyMilliseconds: Int, outcome: FetchOutcome) -> FlagEvent {
        FlagEvent(.fetchCompleted, Details(outcome: outcome, latencyMilliseconds: latencyMilliseconds))
    }
    /// A payload broke the schema and was rejected whole (the Last-Known-Good stays); `fingerprint` is an opaque hash.
    public static func payloadRejected(violations: [FlagViolation], fingerprint: String) -> FlagEvent {
        FlagEvent(.payloadRejected, Details(violations: violations, fingerprint: fingerprint))
    }
    /// An answer was not signed by a trusted key: none of it was read, not even a kill switch; the Last-Known-Good stays.
    public static func signatureRejected(reason: String) -> FlagEvent { FlagEvent(.signatureRejected, Details(message: reason)) }
    /// An accepted payload holds flags the schema does not know; they are kept and served.
    public static func unknownKeys(_ names: [String]) -> FlagEvent { FlagEvent(.unknownKeys, Details(keys: Set(names))) }
    /// A read met list members the app's enum does not know (dropped or `unknown`); once per flag per activation.
    public static func unknownValues(flag: String, values: [String]) -> FlagEvent {
        FlagEvent(.unknownValues, Details(keys: [flag], flag: flag, values: values))
    }

    /// A change stream connected (`stream` is its URL without the query, which may hold a token).
    public static func streamOpened(stream: String) -> FlagEvent { FlagEvent(.streamOpened, Details(stream: stream)) }
    /// A change stream ended or could not connect, and when it is retried (nil: never); polling continues.
    public static func streamClosed(stream: String, reason: String, retryInMilliseconds: Int?) -> FlagEvent {
        FlagEvent(.streamClosed, Details(message: reason, stream: stream, retryInMilliseconds: retryInMilliseconds))
    }
    /// A change stream said flags changed (`via`: its event name, e.g. LaunchDarkly's `patch`); a fetch or update follows.
    public static func changeNotified(stream: String, etag: String?, via: String? = nil) -> FlagEvent {
        FlagEvent(.changeNotified, Details(stream: stream, via: via, etag: etag))
    }
    /// The crash-loop guard started this launch in safe mode, and why.
    public static func safeModeEntered(reason: String) -> FlagEvent { FlagEvent(.safeModeEntered, Details(message: reason)) }
    /// The provider left safe mode, and why.
    public static func safeModeLeft(reason: String) -> FlagEvent { FlagEvent(.safeModeLeft, Details(message: reason)) }
    /// The persisted or launch overrides could not be used, and why; those flags read the service's values.
    public static func overridesRejected(reason: String) -> FlagEvent { FlagEvent(.overridesRejected, Details(message: reason)) }
    /// A hook's stage threw while `flag` was read; reported once per hook and stage.
    public static func hookFailed(hook: String, stage: String, message: String, flag: String) -> FlagEvent {
        FlagEvent(
            .hookFailed,
            Details(
                keys: [flag], message: HookFailure(hook: hook, stage: stage, message: message).description, flag: flag,
                hook: hook, stage: stage))
    }
    /// A hook's stage took longer than the client's hook time limit; the hook is not run again.
    public static func hookDisabled(hook: String, stage: String, elapsedMilliseconds: Int) -> FlagEvent {
        FlagEvent(.hookDisabled, Details(hook: hook, stage: stage, elapsedMilliseconds: elapsedMilliseconds))
    }

    /// A context's first read of a flag this session; not replayed to later ``FeatureFlagClient/events()`` subscribers.
    public static func exposure(_ exposure: FlagExposure) -> FlagEvent {
        FlagEvent(.exposure, Details(keys: [exposure.flag], flag: exposure.flag, exposure: exposure))
    }
    /// The app tracked an event. Not replayed to later ``FeatureFlagClient/events()`` subscribers.
    public static func tracked(_ event: FlagTrackingEvent) -> FlagEvent { FlagEvent(.tracked, Details(tracking: event)) }

    /// A slow reader missed `count` events (beyond 1,024 waiting for a handler or 128 in a stream), told before the next.
    public static func eventsDropped(count: Int) -> FlagEvent { FlagEvent(.eventsDropped, Details(dropped: count)) }

    /// The services of a set answered `flag` differently for the context with `fingerprint`: each service's value by name.
    public static func servicesDisagree(flag: String, fingerprint: String, values: [String: FlagValue]) -> FlagEvent {
        FlagEvent(.servicesDisagree, Details(fingerprint: fingerprint, flag: flag, serviceValues: values))
    }

    /// The exposure an ``Kind/exposure`` event reports.
    public var exposure: FlagExposure? { details.exposure }

    /// The event a ``Kind/tracked`` event carries.
    public var tracking: FlagTrackingEvent? { details.tracking }

    /// Whether this is an exposure or tracking event (analytics, not lifecycle).
    package var isAnalytics: Bool { kind == .exposure || kind == .tracked }

    /// The hook a ``Kind/hookFailed`` or ``Kind/hookDisabled`` event is about.
    public var hook: String? { details.hook }

    /// The stage (`before`, `after`, `error`, `finally`) a ``Kind/hookFailed`` or ``Kind/hookDisabled`` event is about.
    public var hookStage: String? { details.stage }

    /// The stream (URL without its query) of a stream event.
    public var stream: String? { details.stream }

    /// The stream's event name a ``Kind/changeNotified`` event reports, if any (LaunchDarkly's `put`, `patch` …).
    public var via: String? { details.via }

    /// When a ``Kind/streamClosed`` event's stream is tried again (nil: not again).
    public var retryInMilliseconds: Int? { details.retryInMilliseconds }

    /// The flags concerned: changed or unknown keys, or the flag of an unknown-values, hook or exposure event.
    public var keys: Set<String>? { details.keys }

    /// The error code of an ``Kind/error`` event, or of a failed fetch.
    public var errorCode: FlagErrorCode? { details.errorCode }

    /// The failure of a ``Kind/fetchFailed`` event.
    public var fetchError: FetchError? { details.fetchError }

    /// What a ``Kind/fetchCompleted`` event's fetch came to.
    public var outcome: FetchOutcome? { details.outcome }

    /// The fetch latency of ``Kind/activated`` and ``Kind/fetchCompleted`` events.
    public var latencyMilliseconds: Int? { details.latencyMilliseconds }

    /// The configuration version an ``Kind/activated`` event activated.
    public var version: String? { details.version }

    /// The age in seconds of a ``Kind/stale`` event's values; negative when unknown (the clock was set back).
    public var age: TimeInterval? { details.age }

    /// Whether a ``Kind/killSwitch`` event turned the kill switch on.
    public var killSwitchActive: Bool? { details.active }

    /// The broken rules of a ``Kind/payloadRejected`` event.
    public var violations: [FlagViolation]? { details.violations }

    /// The opaque fingerprint of a rejected payload.
    public var payloadFingerprint: String? { details.fingerprint }

    /// How many events an ``Kind/eventsDropped`` event says its reader missed.
    public var droppedCount: Int? { details.dropped }

    /// The flag a ``Kind/servicesDisagree``, ``Kind/unknownValues`` or ``Kind/hookFailed`` event is about.
    public var flag: String? { details.flag }

    /// Each service's value (by service name) a ``Kind/servicesDisagree`` event reports.
    public var serviceValues: [String: FlagValue]? { details.serviceValues }

    /// The list members a ``Kind/unknownValues`` event reports.
    public var unknownValues: [String]? { details.values }

    /// How many contexts and bytes a ``Kind/fallbackLoaded`` event found.
    public var loaded: (contexts: Int, bytes: Int)? {
        guard let contexts = details.contexts, let bytes = details.bytes else { return nil }
        return (contexts, bytes)
    }

    /// Where a ``Kind/fallbackRejected`` or ``Kind/fallbackTampered`` event's file was kept, if it was.
    public var keptAt: String? { details.keptAt }

    /// The event's message or reason: an error's, a rejection's, a closed stream's, safe mode's, a failure's.
    public var message: String? { details.message }

    /// The OpenFeature event name, for the lifecycle events.
    public var openFeatureName: String? { kind.openFeatureName }

    /// One log line, e.g. `activated version=42 latency=12ms`; no context values, control characters escaped as `\u{…}`.
    public var description: String {
        let d = details
        var text = kind.name
        if let subject = Self.subject(of: d) { text += " " + subject }
        if let message = d.message ?? d.values?.joined(separator: ",") {
            text += ": " + message
        } else if let violations = d.violations {
            text += ": " + violations.map(\.description).joined(separator: "; ")
        }
        var fields: [(String, String)] = []
        if let age = d.age {
            if age < 0 {
                fields.append(("age", "unknown"))
                fields.append(("ahead", "\((-age).rounded(.towardZero).roundedClampedToInt)s"))
            } else {
                fields.append(("age", "\(age.rounded(.towardZero).roundedClampedToInt)s"))
            }
        }
        if let contexts = d.contexts { fields.append(("contexts", "\(contexts)")) }
        if let bytes = d.bytes { fields.append(("bytes", "\(bytes)")) }
        if let dropped = d.dropped { fields.append(("count", "\(dropped)")) }
        if let values = d.serviceValues {
            fields.append(("context", d.fingerprint ?? "-"))
            for name in values.keys.sorted() { fields.append((name, values[name].map { "\($0)" } ?? "-")) }
        }
        if let version = d.version { fields.append(("version", version)) }
        if let latency = d.latencyMilliseconds { fields.append(("latency", "\(latency)ms")) }
        if let via = d.via { fields.append(("via", via)) }
        if let etag = d.etag { fields.append(("etag", etag)) }
        if d.hook != nil, d.flag == nil, let stage = d.stage { fields.append(("stage", stage)) }
        if let elapsed = d.elapsedMilliseconds { fields.append(("took", "\(elapsed)ms")) }
        if let e = d.exposure {
            fields.append(e.variant.map { ("variant", $0) } ?? ("value", e.value.map { "\($0)" } ?? "-"))
            fields.append(("source", e.source.rawValue))
        }
        if let e = d.tracking {
            if let value = e.value { fields.append(("value", "\(value)")) }
            if !e.attributes.isEmpty { fields.append(("attributes", e.attributes.keys.sorted().joined(separator: ","))) }
        }
        if let context = d.exposure?.context ?? d.tracking?.context { fields.append(("context", context.fingerprint)) }
        for (name, value) in fields { text += " \(name)=\(value)" }
        if let keptAt = d.keptAt { text += " (kept at \(keptAt))" }
        if d.stream != nil, d.message != nil {
            text += d.retryInMilliseconds.map { " (again in \($0) ms)" } ?? " (not again)"
        }
        return FlagText.printable(text)
    }

    /// What an event is about, for its log line.
    private static func subject(of d: Details) -> String? {
        if let active = d.active { return active ? "on" : "off" }
        if d.serviceValues != nil { return d.flag }
        if d.fetchError == nil, let code = d.errorCode { return code.rawValue }
        if let outcome = d.outcome { return outcome.name }
        if let subject = d.fingerprint ?? d.stream ?? d.flag ?? d.hook ?? d.tracking?.name { return subject }
        return d.keys.map { $0.sorted().joined(separator: ",") }
    }
}
