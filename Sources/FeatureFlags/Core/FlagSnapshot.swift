import Foundation

/// One evaluated flag inside a ``FlagSnapshot``.
public struct FlagEntry: Sendable, Hashable {
    /// The value; nil means "no value from the service: use the code default" (an OFREP
    /// success item without `value`, or a per-flag evaluation error).
    public let value: FlagValue?
    /// The variant name the service chose, if it says.
    public let variant: String?
    /// Why the service chose this value, if it says.
    public let reason: FlagReason?
    /// A per-flag evaluation error the service reported; reads return the code default.
    public let errorCode: FlagErrorCode?
    /// Free-form metadata the service attached.
    public let metadata: [String: FlagValue]

    /// An entry.
    public init(
        value: FlagValue?, variant: String? = nil, reason: FlagReason? = nil,
        errorCode: FlagErrorCode? = nil, metadata: [String: FlagValue] = [:]
    ) {
        self.value = value
        self.variant = variant
        self.reason = reason
        self.errorCode = errorCode
        self.metadata = metadata
    }
}

/// An immutable, complete set of evaluated flags for one context, with where and when it
/// came from. Readers only ever see whole snapshots.
public struct FlagSnapshot: Sendable, Equatable {
    /// The flags by name.
    public let flags: [String: FlagEntry]
    /// The configuration version the service reported (seed 000's `meta_config_version`).
    public let version: String?
    /// When the data was fetched from its origin (kept when persisted and reloaded).
    public let fetchedAt: Date
    /// How long the data counts as fresh, in seconds; nil for "no expiry".
    public let ttl: TimeInterval?
    /// The entity tag the service sent, for conditional requests.
    public let etag: String?
    /// Where this snapshot is being served from.
    public let origin: FlagSource
    /// The fingerprint of the context it was evaluated for, if any.
    public let contextFingerprint: String?

    /// A snapshot.
    public init(
        flags: [String: FlagEntry], version: String? = nil, fetchedAt: Date = Date(), ttl: TimeInterval? = nil,
        etag: String? = nil, origin: FlagSource, contextFingerprint: String? = nil
    ) {
        self.flags = flags
        self.version = version
        self.fetchedAt = fetchedAt
        self.ttl = ttl
        self.etag = etag
        self.origin = origin
        self.contextFingerprint = contextFingerprint
    }

    /// A snapshot of plain values (no variants or reasons).
    public init(
        values: [String: FlagValue], version: String? = nil, fetchedAt: Date = Date(), ttl: TimeInterval? = nil,
        etag: String? = nil, origin: FlagSource, contextFingerprint: String? = nil
    ) {
        self.init(
            flags: values.mapValues { FlagEntry(value: $0) }, version: version, fetchedAt: fetchedAt, ttl: ttl,
            etag: etag, origin: origin, contextFingerprint: contextFingerprint)
    }

    /// No flags at all: every read returns its code default.
    public static let empty = FlagSnapshot(flags: [:], fetchedAt: Date(timeIntervalSince1970: 0), origin: .codeDefault)

    /// The entry for `name`.
    public subscript(name: String) -> FlagEntry? { flags[name] }

    /// Seconds since ``fetchedAt`` (never negative).
    public func age(at now: Date) -> TimeInterval { max(0, now.timeIntervalSince(fetchedAt)) }

    /// Whether the data is older than its ``ttl``.
    public func isExpired(at now: Date) -> Bool {
        guard let ttl else { return false }
        return age(at: now) > ttl
    }

    /// Whether `killSwitchKey` is `true` in this snapshot.
    public func isKillSwitchOn(key killSwitchKey: String) -> Bool {
        flags[killSwitchKey]?.value == .bool(true)
    }

    /// The same data served from another place (``origin``).
    public func servedFrom(_ origin: FlagSource) -> FlagSnapshot {
        FlagSnapshot(
            flags: flags, version: version, fetchedAt: fetchedAt, ttl: ttl, etag: etag, origin: origin,
            contextFingerprint: contextFingerprint)
    }

    /// The names whose entries differ between `self` and `other` (added, removed or changed).
    public func changedKeys(comparedTo other: FlagSnapshot) -> Set<String> {
        var changed = Set<String>()
        for (name, entry) in flags where other.flags[name] != entry { changed.insert(name) }
        for name in other.flags.keys where flags[name] == nil { changed.insert(name) }
        return changed
    }
}
