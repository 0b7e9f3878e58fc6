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
