import Foundation

/// Something a client wants the app to know: lifecycle in OpenFeature's words plus the
/// diagnostics that make failures visible. Messages never contain context attribute values
/// or credentials.
public enum FlagEvent: Sendable, Equatable {
    /// The client can serve evaluated values (PROVIDER_READY).
    case ready
    /// These flags' values changed (PROVIDER_CONFIGURATION_CHANGED).
    case configurationChanged(keys: Set<String>)
    /// Values are older than their TTL and refreshing failed (PROVIDER_STALE).
    case stale(age: TimeInterval)
    /// Something failed; the client keeps serving what it had (PROVIDER_ERROR).
    case error(FlagErrorCode, message: String)
    /// The context changed; values for it are on their way (PROVIDER_RECONCILING).
    case reconciling
    /// Values for the new context are in place (PROVIDER_CONTEXT_CHANGED).
    case contextChanged

    /// The fallback file was read: how many contexts it holds and its size.
    case fallbackLoaded(contexts: Int, bytes: Int)
    /// The fallback file could not be used; the store starts empty. `keptAt` is where the
    /// unusable file was moved for diagnosis, if it was moved.
    case fallbackRejected(reason: String, keptAt: String?)
    /// Persisting a snapshot failed; the in-memory values are unaffected.
    case fallbackWriteFailed(reason: String)
    /// The kill switch turned on (every read returns its safe default) or off.
    case killSwitch(active: Bool)
    /// A fetched snapshot was activated (seed 000's `rc_activation_success`), with the
    /// fetch latency (`rc_fetch_latency_ms`).
    case activated(version: String?, latencyMilliseconds: Int)
    /// A fetch failed; the Last-Known-Good stays.
    case fetchFailed(FetchError)
    /// Values now come from the service (`online`) or from the fallback, and why.
    case modeChanged(ProviderMode, reason: String)
    /// A fetch ended (seed 000's `rc_fetch_latency_ms`): how long it took, in milliseconds,
    /// and what it came to. Answers dropped because the context changed are not reported.
    case fetchCompleted(latencyMilliseconds: Int, result: FetchResultKind)
    /// A fetched payload broke the schema and was rejected whole; the Last-Known-Good stays
    /// (seed 000's `rc_schema_validation_errors`). Every violation names its key.
    /// `fingerprint` identifies the payload (an opaque hash) so repeats can be recognised.
    case payloadRejected(violations: [FlagViolation], fingerprint: String)
    /// An accepted payload holds flags the schema does not know; they are kept and served.
    case unknownKeys([String])
    /// A read met list members the app's enum does not know (newer than this build); they
    /// were ignored or read as the enum's `unknown` case. Reported once per flag per activation.
    case unknownValues(flag: String, values: [String])

    /// The OpenFeature event name, for the lifecycle cases.
    public var openFeatureName: String? {
        switch self {
        case .ready: return "PROVIDER_READY"
        case .configurationChanged: return "PROVIDER_CONFIGURATION_CHANGED"
        case .stale: return "PROVIDER_STALE"
        case .error: return "PROVIDER_ERROR"
        case .reconciling: return "PROVIDER_RECONCILING"
        case .contextChanged: return "PROVIDER_CONTEXT_CHANGED"
        default: return nil
        }
    }
}

/// What a finished fetch came to, for ``FlagEvent/fetchCompleted(latencyMilliseconds:result:)``.
public enum FetchResultKind: String, Sendable, Equatable {
    /// New values were activated.
    case updated
    /// The service confirmed the values served (304 or identical content).
    case unchanged
    /// The payload broke the schema; the Last-Known-Good stays.
    case rejected
    /// The request failed; the Last-Known-Good stays.
    case failed
}

/// A change of served values, delivered by ``FeatureFlagClient/changes()``.
public struct FlagChange: Sendable {
    /// The flags whose effective values changed (every flag, when the kill switch flips).
    public let keys: Set<String>
    /// The snapshot now being served.
    public let snapshot: FlagSnapshot
    /// Whether the kill switch is on after the change.
    public let killSwitchActive: Bool

    /// A change.
    public init(keys: Set<String>, snapshot: FlagSnapshot, killSwitchActive: Bool) {
        self.keys = keys
        self.snapshot = snapshot
        self.killSwitchActive = killSwitchActive
    }
}
