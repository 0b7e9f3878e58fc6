public import FeatureFlags
public import Foundation

/// One flag as a debug screen shows it: what a read returns now and why.
public struct FlagInspectorRow: Sendable, Hashable, Identifiable {
    /// The flag's name.
    public let key: String
    /// What a read returns: the served value, or the declared key's default (nil for a flag
    /// nobody declared and nothing serves).
    public let value: FlagValue?
    /// The type the app reads it as, for declared keys.
    public let declaredType: FlagValueType?
    /// Where the value comes from.
    public let source: FlagSource
    /// Why it was chosen.
    public let reason: FlagReason
    /// The error code, when the read fails (FLAG_NOT_FOUND, TYPE_MISMATCH, …).
    public let errorCode: FlagErrorCode?
    /// The variant the service chose, if any.
    public let variant: String?
    /// The version of the snapshot it comes from.
    public let version: String?
    /// How old the snapshot it comes from is, in seconds.
    public let age: TimeInterval?
    /// Whether a tester's override is set for it (it may still read its safe default while
    /// the kill switch is on).
    public let isOverridden: Bool
    /// The service of a set (``ServiceStrategy``) the value came from; nil for one service or a chain.
    public internal(set) var service: String? = nil

    /// The flag's name.
    public var id: String { key }
}
