public import Foundation

/// Where a value came from.
public enum FlagSource: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Fetched from the flag service in this session.
    case network
    /// The Last-Known-Good snapshot persisted on disk.
    case fallback
    /// Defaults bundled with the app (a dictionary or a JSON file).
    case bundledDefaults = "bundled_defaults"
    /// The `FlagKey`'s code default.
    case codeDefault = "code_default"
    /// Forced to the code default by the kill switch.
    case killSwitch = "kill_switch"
    /// Set in code: test doubles, debug overrides.
    case override

    /// The name as the documentation, events and `flagctl` spell it: `bundled_defaults`.
    public var description: String { rawValue }
}

/// Why a value was chosen, in OpenFeature's words; unlisted reasons from a service pass through.
public struct FlagReason: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The reason text, e.g. `TARGETING_MATCH`.
    public let rawValue: String
    /// Wraps a reason text.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The value is static: no dynamic evaluation.
    public static let `static` = FlagReason(rawValue: "STATIC")
    /// A pre-configured or code default.
    public static let `default` = FlagReason(rawValue: "DEFAULT")
    /// A targeting rule matched.
    public static let targetingMatch = FlagReason(rawValue: "TARGETING_MATCH")
    /// A pseudorandom split assigned the value.
    public static let split = FlagReason(rawValue: "SPLIT")
    /// Served from a cache (here: the fallback file).
    public static let cached = FlagReason(rawValue: "CACHED")
    /// The flag is disabled (here: the kill switch forced the safe value).
    public static let disabled = FlagReason(rawValue: "DISABLED")
    /// The reason is not known.
    public static let unknown = FlagReason(rawValue: "UNKNOWN")
    /// The value is older than its TTL and could not be refreshed.
    public static let stale = FlagReason(rawValue: "STALE")
    /// Evaluation failed; the value is the default.
    public static let error = FlagReason(rawValue: "ERROR")

    /// The reason text.
    public var description: String { rawValue }
}

/// Why an evaluation failed, in OpenFeature's codes.
public enum FlagErrorCode: String, Sendable, Hashable, CaseIterable {
    /// The provider has not loaded anything yet.
    case providerNotReady = "PROVIDER_NOT_READY"
    /// No flag has this key.
    case flagNotFound = "FLAG_NOT_FOUND"
    /// The value could not be parsed.
    case parseError = "PARSE_ERROR"
    /// The value's type does not fit the key's type.
    case typeMismatch = "TYPE_MISMATCH"
    /// The context has no targeting key but the flag needs one.
    case targetingKeyMissing = "TARGETING_KEY_MISSING"
    /// The context is unusable.
    case invalidContext = "INVALID_CONTEXT"
    /// The provider cannot recover (for example bad credentials).
    case providerFatal = "PROVIDER_FATAL"
    /// Anything else.
    case general = "GENERAL"

    /// The code for a wire string; unknown codes map to ``general``.
    public init(wire: String) { self = FlagErrorCode(rawValue: wire) ?? .general }
}

/// A value plus why: what a read returned and where it came from.
public struct FlagDetails<Value: Sendable>: Sendable {
    /// The flag's name.
    public let key: String
    /// The value the read returns.
    public let value: Value
    /// The variant the service chose, if any.
    public var variant: String? { extras?.variant }
    /// Why this value.
    public let reason: FlagReason
    /// Set when the value is the default because something failed.
    public let errorCode: FlagErrorCode?
    /// A human-readable account of the error, without context attribute values.
    public var errorMessage: String? { extras?.errorMessage }
    /// Where the value came from.
    public let source: FlagSource
    /// The snapshot's version, if the value came from a snapshot.
    public let snapshotVersion: String?
    /// Seconds since the snapshot was fetched; nil for code defaults.
    public let age: TimeInterval?
    /// Metadata the service attached to the flag.
    public var metadata: [String: FlagValue] { extras?.metadata ?? [:] }
    /// The service of a set (``ServiceStrategy``) the value came from; nil for one service or a chain.
    public var service: String? { extras?.service }
    /// Variant, metadata and error message, shared with the flag table (nil for most reads): fewer fields to copy.
    @usableFromInline let extras: FlagExtras?

    /// Details; mainly for client implementations and tests.
    public init(
        key: String, value: Value, variant: String? = nil, reason: FlagReason, errorCode: FlagErrorCode? = nil,
        errorMessage: String? = nil, source: FlagSource, snapshotVersion: String? = nil, age: TimeInterval? = nil,
        metadata: [String: FlagValue] = [:]
    ) {
        self.init(
            key: key, value: value, extras: FlagExtras.of(variant: variant, metadata: metadata), reason: reason, errorCode: errorCode,
            errorMessage: errorMessage, source: source, snapshotVersion: snapshotVersion, age: age)
    }

    /// Details whose variant and metadata are `extras` (a flag table's, shared).
    @usableFromInline
    init(
        key: String, value: Value, extras: FlagExtras?, reason: FlagReason, errorCode: FlagErrorCode? = nil,
        errorMessage: String? = nil, source: FlagSource, snapshotVersion: String? = nil, age: TimeInterval? = nil
    ) {
        self.key = key
        self.value = value
        self.extras = errorMessage.map {
            FlagExtras(
                variant: extras?.variant, reason: extras?.reason, errorCode: extras?.errorCode, metadata: extras?.metadata ?? [:],
                service: extras?.service, errorMessage: $0)
        } ?? extras
        self.reason = reason
        self.errorCode = errorCode
        self.source = source
        self.snapshotVersion = snapshotVersion
        self.age = age
    }
}

extension FlagDetails: Equatable where Value: Equatable {
    /// Equal when every field is.
    public static func == (a: Self, b: Self) -> Bool {
        a.key == b.key && a.value == b.value && a.reason == b.reason && a.errorCode == b.errorCode
            && a.errorMessage == b.errorMessage && a.source == b.source && a.snapshotVersion == b.snapshotVersion && a.age == b.age
            && (a.extras === b.extras || (a.variant == b.variant && a.metadata == b.metadata))
    }
}

/// An entry's variant, reason, error code and metadata; immutable, shared by every ``FlagDetails`` read from it.
@usableFromInline
package final class FlagExtras: Sendable {
    let variant: String?
    let reason: FlagReason?
    let errorCode: FlagErrorCode?
    let metadata: [String: FlagValue]
    /// The service of a set the value came from.
    let service: String?
    /// The message of a read that failed (never set in a flag table's extras).
    let errorMessage: String?

    /// Extras saying these.
    init(
        variant: String?, reason: FlagReason?, errorCode: FlagErrorCode?, metadata: [String: FlagValue], service: String? = nil,
        errorMessage: String? = nil
    ) {
        self.variant = variant
        self.reason = reason
        self.errorCode = errorCode
        self.metadata = metadata
        self.service = service
        self.errorMessage = errorMessage
    }

    /// The extras of `entry`, or nil when it has none.
    package static func of(_ entry: FlagEntry) -> FlagExtras? {
        of(variant: entry.variant, reason: entry.reason, errorCode: entry.errorCode, metadata: entry.metadata, service: entry.service)
    }

    /// The extras of an entry saying these, or nil when it says none of them.
    package static func of(
        variant: String?, reason: FlagReason? = nil, errorCode: FlagErrorCode? = nil, metadata: [String: FlagValue], service: String? = nil
    ) -> FlagExtras? {
        if variant == nil, reason == nil, errorCode == nil, metadata.isEmpty, service == nil { return nil }
        return FlagExtras(variant: variant, reason: reason, errorCode: errorCode, metadata: metadata, service: service)
    }
}
