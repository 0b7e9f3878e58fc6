public import Foundation

/// Something a client wants the app to know: lifecycle in OpenFeature's words plus the
/// diagnostics that make failures visible. Messages never contain context attribute values
/// or credentials.
///
/// A struct rather than an enum so that new events can be added without breaking an app's
/// `switch`: switch on ``kind`` (with a `default:`), compare with `==`, and read the details
/// through the properties.
///
/// ```swift
/// for await event in provider.events() {
///     switch event.kind {
///     case .fetchFailed: log.warning("flags: \(event)")
///     case .killSwitch where event.killSwitchActive == true: showLimitedModeBanner()
///     default: break
///     }
/// }
/// ```
public struct FlagEvent: Sendable, Equatable, CustomStringConvertible {
    /// A kind of event. New kinds may be added in any release.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, e.g. `fetch_failed`.
        public let name: String
        private init(_ name: String) { self.name = name }

        /// The client can serve evaluated values (PROVIDER_READY).
        public static let ready = Kind("ready")
        /// Flags' values changed (PROVIDER_CONFIGURATION_CHANGED).
        public static let configurationChanged = Kind("configuration_changed")
        /// Values are older than their TTL and refreshing failed (PROVIDER_STALE).
        public static let stale = Kind("stale")
        /// Something failed; the client keeps serving what it had (PROVIDER_ERROR).
        public static let error = Kind("error")
        /// The context changed; values for it are on their way (PROVIDER_RECONCILING).
        public static let reconciling = Kind("reconciling")
        /// Values for the new context are in place (PROVIDER_CONTEXT_CHANGED).
        public static let contextChanged = Kind("context_changed")
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
        /// The overrides file or the launch overrides could not be used (see ``FlagOverrides``).
        public static let overridesRejected = Kind("overrides_rejected")
        /// A hook's stage threw (reported once per hook and stage).
        public static let hookFailed = Kind("hook_failed")
        /// A hook took longer than the time limit and is not run again by this client.
        public static let hookDisabled = Kind("hook_disabled")
        /// A context read a flag for the first time this session (when exposures are on).
        public static let exposure = Kind("exposure")
        /// The app tracked an event.
        public static let tracked = Kind("tracked")

        /// The name.
        public var description: String { name }
    }

    enum Base: Sendable, Equatable {
        case ready
        case configurationChanged(keys: Set<String>)
        case stale(age: TimeInterval)
        case error(FlagErrorCode, message: String)
        case reconciling
        case contextChanged
        case fallbackLoaded(contexts: Int, bytes: Int)
        case fallbackRejected(reason: String, keptAt: String?)
        case fallbackWriteFailed(reason: String)
        case fallbackTampered(reason: String, keptAt: String?)
        case fallbackWarning(reason: String)
        case killSwitch(active: Bool)
        case activated(version: String?, latencyMilliseconds: Int)
        case fetchFailed(FetchError)
        case fetchCompleted(latencyMilliseconds: Int, outcome: FetchOutcome)
        case payloadRejected(violations: [FlagViolation], fingerprint: String)
        case signatureRejected(reason: String)
        case unknownKeys([String])
        case unknownValues(flag: String, values: [String])
        case streamOpened(stream: String)
        case streamClosed(stream: String, reason: String, retryInMilliseconds: Int?)
        case changeNotified(stream: String, etag: String?, via: String?)
        case safeModeEntered(reason: String)
        case safeModeLeft(reason: String)
        case overridesRejected(reason: String)
        case hookFailed(HookFailure, flag: String)
        case hookDisabled(hook: String, stage: String, elapsedMilliseconds: Int)
        case exposure(FlagExposure)
        case tracked(FlagTrackingEvent)
    }

    let base: Base

    private init(_ base: Base) { self.base = base }

    /// The client can serve evaluated values (PROVIDER_READY).
    public static let ready = FlagEvent(.ready)
    /// These flags' effective values changed (PROVIDER_CONFIGURATION_CHANGED).
    public static func configurationChanged(keys: Set<String>) -> FlagEvent { FlagEvent(.configurationChanged(keys: keys)) }
    /// Values are `age` seconds old, past their TTL, and refreshing failed (PROVIDER_STALE).
    public static func stale(age: TimeInterval) -> FlagEvent { FlagEvent(.stale(age: age)) }
    /// Something failed; the client keeps serving what it had (PROVIDER_ERROR).
    public static func error(_ code: FlagErrorCode, message: String) -> FlagEvent { FlagEvent(.error(code, message: message)) }
    /// The context changed; values for it are on their way (PROVIDER_RECONCILING).
    public static let reconciling = FlagEvent(.reconciling)
    /// Values for the new context are in place (PROVIDER_CONTEXT_CHANGED).
    public static let contextChanged = FlagEvent(.contextChanged)
    /// The fallback file was read: how many contexts it holds and its size.
    public static func fallbackLoaded(contexts: Int, bytes: Int) -> FlagEvent { FlagEvent(.fallbackLoaded(contexts: contexts, bytes: bytes)) }
    /// The fallback file (or one snapshot in it) could not be used. `keptAt` is where an
    /// unusable file was moved for diagnosis, if it was moved.
    public static func fallbackRejected(reason: String, keptAt: String?) -> FlagEvent {
        FlagEvent(.fallbackRejected(reason: reason, keptAt: keptAt))
    }
    /// With trusted keys, the fallback file's snapshot for the context served was not what a
    /// trusted key signed (edited, or stored unsigned): it is not served, the file as it was is
    /// kept at `keptAt` for diagnosis, and the snapshot is removed.
    public static func fallbackTampered(reason: String, keptAt: String?) -> FlagEvent {
        FlagEvent(.fallbackTampered(reason: reason, keptAt: keptAt))
    }
    /// Persisting a snapshot failed; the values served are unaffected.
    public static func fallbackWriteFailed(reason: String) -> FlagEvent { FlagEvent(.fallbackWriteFailed(reason: reason)) }
    /// The fallback file was used, but it is owned by another user or open to others: anyone
    /// who can write it decides the app's flags.
    public static func fallbackWarning(reason: String) -> FlagEvent { FlagEvent(.fallbackWarning(reason: reason)) }
    /// The kill switch turned on (every read returns its safe default) or off.
    public static func killSwitch(active: Bool) -> FlagEvent { FlagEvent(.killSwitch(active: active)) }
    /// A fetched snapshot was activated, with the fetch latency.
    public static func activated(version: String?, latencyMilliseconds: Int) -> FlagEvent {
        FlagEvent(.activated(version: version, latencyMilliseconds: latencyMilliseconds))
    }
    /// A fetch failed; the Last-Known-Good stays.
    public static func fetchFailed(_ error: FetchError) -> FlagEvent { FlagEvent(.fetchFailed(error)) }
    /// A fetch ended: how long it took and what it came to. Answers dropped because the
    /// context changed are not reported.
    public static func fetchCompleted(latencyMilliseconds: Int, outcome: FetchOutcome) -> FlagEvent {
        FlagEvent(.fetchCompleted(latencyMilliseconds: latencyMilliseconds, outcome: outcome))
    }
    /// A fetched payload broke the schema and was rejected whole; the Last-Known-Good stays.
    /// Every violation names its key; `fingerprint` identifies the payload (an opaque hash).
    public static func payloadRejected(violations: [FlagViolation], fingerprint: String) -> FlagEvent {
        FlagEvent(.payloadRejected(violations: violations, fingerprint: fingerprint))
    }
    /// Trusted keys are configured and an answer was not a document one of them signed
    /// (unsigned, an unknown key id, a bad signature): nothing of it was read — not even a kill
    /// switch, which did not come from the operator — and the Last-Known-Good stays.
    public static func signatureRejected(reason: String) -> FlagEvent { FlagEvent(.signatureRejected(reason: reason)) }
    /// An accepted payload holds flags the schema does not know; they are kept and served.
    public static func unknownKeys(_ names: [String]) -> FlagEvent { FlagEvent(.unknownKeys(names)) }
    /// A read met list members the app's enum does not know (newer than this build); they
    /// were ignored or read as the enum's `unknown` case. Reported once per flag per activation.
    public static func unknownValues(flag: String, values: [String]) -> FlagEvent {
        FlagEvent(.unknownValues(flag: flag, values: values))
    }

    /// A change stream connected (`stream` is its URL without the query, which may hold a token).
    public static func streamOpened(stream: String) -> FlagEvent { FlagEvent(.streamOpened(stream: stream)) }
    /// A change stream ended or could not connect, and when it is tried again (nil: not again,
    /// e.g. the service answered 204). Polling is the safety net meanwhile.
    public static func streamClosed(stream: String, reason: String, retryInMilliseconds: Int?) -> FlagEvent {
        FlagEvent(.streamClosed(stream: stream, reason: reason, retryInMilliseconds: retryInMilliseconds))
    }
    /// A change stream said flags changed (`etag`: the configuration's tag, if it sent one;
    /// `via`: the stream's event when it names the kind of change — LaunchDarkly's `put`,
    /// `patch`, `delete`, `ping`); a fetch follows at once, or the values it carried are applied.
    public static func changeNotified(stream: String, etag: String?, via: String? = nil) -> FlagEvent {
        FlagEvent(.changeNotified(stream: stream, etag: etag, via: via))
    }
    /// The crash-loop guard started this launch in safe mode, and why.
    public static func safeModeEntered(reason: String) -> FlagEvent { FlagEvent(.safeModeEntered(reason: reason)) }
    /// The provider left safe mode, and why.
    public static func safeModeLeft(reason: String) -> FlagEvent { FlagEvent(.safeModeLeft(reason: reason)) }
    /// The persisted overrides or those named at launch could not be used, and why; reads are
    /// the service's for those flags.
    public static func overridesRejected(reason: String) -> FlagEvent { FlagEvent(.overridesRejected(reason: reason)) }
    /// A hook's stage threw while `flag` was read; reported once per hook and stage. A `before`
    /// or `after` failure made that read return its default with `ERROR`/`GENERAL`.
    public static func hookFailed(hook: String, stage: String, message: String, flag: String) -> FlagEvent {
        FlagEvent(.hookFailed(HookFailure(hook: hook, stage: stage, message: message), flag: flag))
    }
    /// A hook's stage took `elapsedMilliseconds`, longer than the client's hook time limit: the
    /// client does not run the hook again.
    public static func hookDisabled(hook: String, stage: String, elapsedMilliseconds: Int) -> FlagEvent {
        FlagEvent(.hookDisabled(hook: hook, stage: stage, elapsedMilliseconds: elapsedMilliseconds))
    }

    /// A context read a flag for the first time this session: what it was served. Not replayed
    /// to later ``FeatureFlagClient/events()`` subscribers.
    public static func exposure(_ exposure: FlagExposure) -> FlagEvent { FlagEvent(.exposure(exposure)) }
    /// The app tracked an event. Not replayed to later ``FeatureFlagClient/events()`` subscribers.
    public static func tracked(_ event: FlagTrackingEvent) -> FlagEvent { FlagEvent(.tracked(event)) }

    /// The exposure an ``Kind/exposure`` event reports.
    public var exposure: FlagExposure? {
        if case .exposure(let exposure) = base { return exposure }
        return nil
    }

    /// The event a ``Kind/tracked`` event carries.
    public var tracking: FlagTrackingEvent? {
        if case .tracked(let event) = base { return event }
        return nil
    }

    /// Whether this is an exposure or tracking event (analytics, not lifecycle).
    package var isAnalytics: Bool {
        switch base {
        case .exposure, .tracked: return true
        default: return false
        }
    }

    /// The kind of event.
    public var kind: Kind {
        switch base {
        case .ready: return .ready
        case .configurationChanged: return .configurationChanged
        case .stale: return .stale
        case .error: return .error
        case .reconciling: return .reconciling
        case .contextChanged: return .contextChanged
        case .fallbackLoaded: return .fallbackLoaded
        case .fallbackRejected: return .fallbackRejected
        case .fallbackWriteFailed: return .fallbackWriteFailed
        case .fallbackTampered: return .fallbackTampered
        case .fallbackWarning: return .fallbackWarning
        case .killSwitch: return .killSwitch
        case .activated: return .activated
        case .fetchFailed: return .fetchFailed
        case .fetchCompleted: return .fetchCompleted
        case .payloadRejected: return .payloadRejected
        case .signatureRejected: return .signatureRejected
        case .unknownKeys: return .unknownKeys
        case .unknownValues: return .unknownValues
        case .streamOpened: return .streamOpened
        case .streamClosed: return .streamClosed
        case .changeNotified: return .changeNotified
        case .safeModeEntered: return .safeModeEntered
        case .safeModeLeft: return .safeModeLeft
        case .overridesRejected: return .overridesRejected
        case .hookFailed: return .hookFailed
        case .hookDisabled: return .hookDisabled
        case .exposure: return .exposure
        case .tracked: return .tracked
        }
    }

    /// The hook a ``Kind/hookFailed`` or ``Kind/hookDisabled`` event is about.
    public var hook: String? {
        switch base {
        case .hookFailed(let error, _): return error.hook
        case .hookDisabled(let hook, _, _): return hook
        default: return nil
        }
    }

    /// The stage a ``Kind/hookFailed`` or ``Kind/hookDisabled`` event is about: `before`,
    /// `after`, `error` or `finally`.
    public var hookStage: String? {
        switch base {
        case .hookFailed(let error, _): return error.stage
        case .hookDisabled(_, let stage, _): return stage
        default: return nil
        }
    }

    /// The stream (URL without its query) of a stream event.
    public var stream: String? {
        switch base {
        case .streamOpened(let stream), .streamClosed(let stream, _, _), .changeNotified(let stream, _, _): return stream
        default: return nil
        }
    }

    /// The stream event a ``Kind/changeNotified`` event reports, when the stream names its kind
    /// of change (LaunchDarkly's `put`, `patch`, `delete`, `ping`).
    public var via: String? {
        if case .changeNotified(_, _, let via) = base { return via }
        return nil
    }

    /// When a ``Kind/streamClosed`` event's stream is tried again (nil: not again).
    public var retryInMilliseconds: Int? {
        if case .streamClosed(_, _, let ms) = base { return ms }
        return nil
    }

    // MARK: Details

    /// The flags concerned: changed keys, unknown keys, or the one flag with unknown values.
    public var keys: Set<String>? {
        switch base {
        case .configurationChanged(let keys): return keys
        case .unknownKeys(let names): return Set(names)
        case .unknownValues(let flag, _), .hookFailed(_, let flag): return [flag]
        case .exposure(let exposure): return [exposure.flag]
        default: return nil
        }
    }

    /// The error code of an ``Kind/error`` event, or of a failed fetch.
    public var errorCode: FlagErrorCode? {
        switch base {
        case .error(let code, _): return code
        case .fetchFailed(let error): return error.errorCode
        default: return nil
        }
    }

    /// The failure of a ``Kind/fetchFailed`` event.
    public var fetchError: FetchError? {
        if case .fetchFailed(let error) = base { return error }
        return nil
    }

    /// What a ``Kind/fetchCompleted`` event's fetch came to.
    public var outcome: FetchOutcome? {
        if case .fetchCompleted(_, let outcome) = base { return outcome }
        return nil
    }

    /// The fetch latency of ``Kind/activated`` and ``Kind/fetchCompleted`` events.
    public var latencyMilliseconds: Int? {
        switch base {
        case .activated(_, let ms), .fetchCompleted(let ms, _): return ms
        default: return nil
        }
    }

    /// The configuration version an ``Kind/activated`` event activated.
    public var version: String? {
        if case .activated(let version, _) = base { return version }
        return nil
    }

    /// The age in seconds of the values a ``Kind/stale`` event is about.
    public var age: TimeInterval? {
        if case .stale(let age) = base { return age }
        return nil
    }

    /// Whether a ``Kind/killSwitch`` event turned the kill switch on.
    public var killSwitchActive: Bool? {
        if case .killSwitch(let active) = base { return active }
        return nil
    }

    /// The broken rules of a ``Kind/payloadRejected`` event.
    public var violations: [FlagViolation]? {
        if case .payloadRejected(let violations, _) = base { return violations }
        return nil
    }

    /// The opaque fingerprint of a rejected payload.
    public var payloadFingerprint: String? {
        if case .payloadRejected(_, let fingerprint) = base { return fingerprint }
        return nil
    }

    /// The list members a ``Kind/unknownValues`` event reports.
    public var unknownValues: [String]? {
        if case .unknownValues(_, let values) = base { return values }
        return nil
    }

    /// How many contexts and bytes a ``Kind/fallbackLoaded`` event found.
    public var loaded: (contexts: Int, bytes: Int)? {
        if case .fallbackLoaded(let contexts, let bytes) = base { return (contexts, bytes) }
        return nil
    }

    /// Where a ``Kind/fallbackRejected`` event's file was moved, or a ``Kind/fallbackTampered``
    /// event's file was copied, if it was.
    public var keptAt: String? {
        switch base {
        case .fallbackRejected(_, let keptAt), .fallbackTampered(_, let keptAt): return keptAt
        default: return nil
        }
    }

    /// The message of an error, the reason of a rejected or unwritable fallback file or of a
    /// rejected signature, or the description of a fetch failure.
    public var message: String? {
        switch base {
        case .error(_, let message): return message
        case .fallbackRejected(let reason, _), .fallbackWriteFailed(let reason), .fallbackWarning(let reason),
            .fallbackTampered(let reason, _):
            return reason
        case .fetchFailed(let error): return error.description
        case .streamClosed(_, let reason, _), .safeModeEntered(let reason), .safeModeLeft(let reason),
            .overridesRejected(let reason), .signatureRejected(let reason):
            return reason
        case .hookFailed(let error, _): return error.description
        default: return nil
        }
    }

    /// The OpenFeature event name, for the lifecycle events.
    public var openFeatureName: String? {
        switch base {
        case .ready: return "PROVIDER_READY"
        case .configurationChanged: return "PROVIDER_CONFIGURATION_CHANGED"
        case .stale: return "PROVIDER_STALE"
        case .error: return "PROVIDER_ERROR"
        case .reconciling: return "PROVIDER_RECONCILING"
        case .contextChanged: return "PROVIDER_CONTEXT_CHANGED"
        default: return nil
        }
    }

    /// One line for logs: the kind and its details (never context values or credentials).
    public var description: String {
        switch base {
        case .ready, .reconciling, .contextChanged: return kind.name
        case .configurationChanged(let keys): return "configuration_changed \(keys.sorted().joined(separator: ","))"
        case .stale(let age): return "stale age=\(Int(age))s"
        case .error(let code, let message): return "error \(code.rawValue): \(message)"
        case .fallbackLoaded(let contexts, let bytes): return "fallback_loaded contexts=\(contexts) bytes=\(bytes)"
        case .fallbackRejected(let reason, let keptAt):
            return "fallback_rejected: \(reason)" + (keptAt.map { " (kept at \($0))" } ?? "")
        case .fallbackWriteFailed(let reason): return "fallback_write_failed: \(reason)"
        case .fallbackTampered(let reason, let keptAt):
            return "fallback_tampered: \(reason)" + (keptAt.map { " (kept at \($0))" } ?? "")
        case .fallbackWarning(let reason): return "fallback_warning: \(reason)"
        case .killSwitch(let active): return "kill_switch \(active ? "on" : "off")"
        case .activated(let version, let ms): return "activated version=\(version ?? "-") latency=\(ms)ms"
        case .fetchFailed(let error): return "fetch_failed: \(error)"
        case .fetchCompleted(let ms, let outcome): return "fetch_completed \(outcome.name) latency=\(ms)ms"
        case .payloadRejected(let violations, let fingerprint):
            return "payload_rejected \(fingerprint): \(violations.map(\.description).joined(separator: "; "))"
        case .signatureRejected(let reason): return "signature_rejected: \(reason)"
        case .unknownKeys(let names): return "unknown_keys \(names.joined(separator: ","))"
        case .unknownValues(let flag, let values): return "unknown_values \(flag): \(values.joined(separator: ","))"
        case .streamOpened(let stream): return "stream_opened \(stream)"
        case .streamClosed(let stream, let reason, let ms):
            return "stream_closed \(stream): \(reason)" + (ms.map { " (again in \($0) ms)" } ?? " (not again)")
        case .changeNotified(let stream, let etag, let via):
            return "change_notified \(stream)" + (via.map { " via \($0)" } ?? "") + (etag.map { " etag=\($0)" } ?? "")
        case .safeModeEntered(let reason): return "safe_mode_entered: \(reason)"
        case .safeModeLeft(let reason): return "safe_mode_left: \(reason)"
        case .overridesRejected(let reason): return "overrides_rejected: \(reason)"
        case .hookFailed(let error, let flag): return "hook_failed \(flag): \(error)"
        case .hookDisabled(let hook, let stage, let ms): return "hook_disabled \(hook): \(stage) took \(ms) ms"
        case .exposure(let e):
            return "exposure \(e.flag) \(e.variant.map { "variant=\($0)" } ?? "value") source=\(e.source.rawValue) context=\(e.context.fingerprint)"
        case .tracked(let e):
            let value = e.value.map { " value=\($0)" } ?? ""
            let names = e.attributes.isEmpty ? "" : " attributes=\(e.attributes.keys.sorted().joined(separator: ","))"
            return "tracked \(e.name)\(value)\(names) context=\(e.context.fingerprint)"
        }
    }
}
