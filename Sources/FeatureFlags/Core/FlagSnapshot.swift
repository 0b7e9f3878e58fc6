public import Foundation

/// One evaluated flag inside a ``FlagSnapshot``.
public struct FlagEntry: Sendable, Hashable {
    /// The value; nil means the service sent none (OFREP item without `value`, or an error): use the code default.
    public let value: FlagValue?
    /// The variant name the service chose, if it says.
    public let variant: String?
    /// Why the service chose this value, if it says.
    public let reason: FlagReason?
    /// A per-flag evaluation error the service reported; reads return the code default.
    public let errorCode: FlagErrorCode?
    /// Free-form metadata the service attached.
    public let metadata: [String: FlagValue]
    /// The service (endpoint) of a set the entry came from (``ServiceStrategy``); nil for a single service or a chain.
    public let service: String?

    /// An entry.
    public init(
        value: FlagValue?, variant: String? = nil, reason: FlagReason? = nil,
        errorCode: FlagErrorCode? = nil, metadata: [String: FlagValue] = [:], service: String? = nil
    ) {
        self.value = value
        self.variant = variant
        self.reason = reason
        self.errorCode = errorCode
        self.metadata = metadata
        self.service = service
    }
}

/// An immutable, complete set of evaluated flags for one context, with when it was fetched and its TTL.
public struct FlagSnapshot: Sendable, Equatable {
    /// The flags by name.
    public var flags: [String: FlagEntry] { storage.dictionary }
    /// The flags, as a dictionary, a read table or both.
    package let storage: FlagSet
    /// The configuration version the service reported, if it reports one.
    public let version: String?
    /// When the data was fetched from its service (kept when persisted and reloaded).
    public var fetchedAt: Date { Date(timeIntervalSinceReferenceDate: fetchedAtSeconds) }
    /// ``fetchedAt`` in seconds: `Date` has no fixed layout on Apple platforms (`Support/FixedLayout.swift`).
    private var fetchedAtSeconds: TimeInterval
    /// How long the data counts as fresh, in seconds; nil for "no expiry".
    public let ttl: TimeInterval?
    /// The fingerprint of the context it was evaluated for, if any.
    public let contextFingerprint: String?
    /// The flag definitions it was evaluated from on the device (local evaluation), if any.
    package var heldRules: (any HeldRules)?
    /// The verified signature's stamp, if any: rollback and freeze are judged on it.
    package var signature: SignatureStamp?
    /// Whether missing flags are off (Unleash omits disabled ones): `Bool` reads get `false`, others their default (`DISABLED`).
    public package(set) var missingFlagsAreOff = false

    /// A snapshot.
    public init(
        flags: [String: FlagEntry], version: String? = nil, fetchedAt: Date = Date(), ttl: TimeInterval? = nil,
        contextFingerprint: String? = nil
    ) {
        self.init(storage: FlagSet(flags), version: version, fetchedAt: fetchedAt, ttl: ttl, contextFingerprint: contextFingerprint)
    }

    /// A snapshot of the flags `storage` holds.
    package init(storage: FlagSet, version: String?, fetchedAt: Date, ttl: TimeInterval?, contextFingerprint: String?) {
        self.storage = storage
        self.version = version
        self.fetchedAtSeconds = fetchedAt.timeIntervalSinceReferenceDate
        self.ttl = ttl
        self.contextFingerprint = contextFingerprint
    }

    /// A snapshot of plain values (no variants or reasons).
    public init(
        values: [String: FlagValue], version: String? = nil, fetchedAt: Date = Date(), ttl: TimeInterval? = nil,
        contextFingerprint: String? = nil
    ) {
        self.init(
            flags: values.mapValues { FlagEntry(value: $0) }, version: version, fetchedAt: fetchedAt, ttl: ttl,
            contextFingerprint: contextFingerprint)
    }

    /// No flags at all: every read returns its code default.
    public static let empty = FlagSnapshot(flags: [:], fetchedAt: Date(timeIntervalSince1970: 0))

    /// The entry for `name`.
    public subscript(name: String) -> FlagEntry? { storage.entry(name) }

    /// Equal when every field is, flags and held rules included.
    public static func == (a: FlagSnapshot, b: FlagSnapshot) -> Bool {
        a.version == b.version && a.fetchedAtSeconds == b.fetchedAtSeconds && a.ttl == b.ttl && a.contextFingerprint == b.contextFingerprint
            && a.missingFlagsAreOff == b.missingFlagsAreOff && Self.sameRules(a.heldRules, b.heldRules)
            && a.signature == b.signature && a.storage.sameEntries(as: b.storage)
    }

    /// Whether both hold no rules, or the same rules.
    private static func sameRules(_ a: (any HeldRules)?, _ b: (any HeldRules)?) -> Bool {
        a === b || (a.flatMap { x in b.map { x.isSame(as: $0) } } ?? false)
    }

    /// Seconds since ``fetchedAt`` (never negative).
    public func age(at now: Date) -> TimeInterval { max(0, signedAge(at: now)) }

    /// The age unclamped: negative when stamped after `now` (the clock was set back).
    func signedAge(at now: Date) -> TimeInterval { now.timeIntervalSinceReferenceDate - fetchedAtSeconds }

    /// Whether the data is older than its ``ttl``, past its signed expiry, or stamped over 60 s after `now` (age unknown).
    public func isExpired(at now: Date) -> Bool {
        // Signed expiry beats the TTL: a replayed old signed document (a freeze) is not current.
        if let expiresAt = signature?.expiresAt, now >= expiresAt { return true }
        guard let ttl else { return false }
        if fetchedAtSeconds - now.timeIntervalSinceReferenceDate > Self.clockSkewTolerance { return true }
        return age(at: now) > ttl
    }

    /// How far ahead a fetch time may lie before its age counts as unknown (beyond a usual time-sync correction).
    static let clockSkewTolerance: TimeInterval = 60

    /// Seconds until ``isExpired(at:)`` turns true; nil when it never will or already has.
    func secondsUntilExpiry(at now: Date) -> TimeInterval? {
        guard !isExpired(at: now) else { return nil }
        var remaining: TimeInterval?
        if let expiresAt = signature?.expiresAt { remaining = expiresAt.timeIntervalSince(now) }
        if let ttl { remaining = min(remaining ?? .infinity, ttl - age(at: now)) }
        return remaining.flatMap { $0.isFinite ? max(0, $0) : nil }
    }

    /// Whether `killSwitchKey` is `true` in this snapshot — the boolean, or the text `"true"` (any case) of a
    /// service that sends every value as text (Firebase Remote Config): a kill is read the safe way.
    public func isKillSwitchOn(key killSwitchKey: String) -> Bool {
        switch storage.entry(killSwitchKey)?.value {
        case .bool(true)?: return true
        case .string(let text)?: return text.lowercased() == "true"
        default: return false
        }
    }

    /// The same data refetched at `date` (a 304); the signature stamp, expiry included, stays: a 304 is unsigned.
    func refetched(at date: Date) -> FlagSnapshot {
        var again = self
        again.fetchedAtSeconds = date.timeIntervalSinceReferenceDate
        return again
    }
}

/// Rules a snapshot was evaluated from on the device: the core's opaque seam to local evaluation (`FeatureFlagsFlagd`).
package protocol HeldRules: AnyObject, Sendable {
    /// The document's bytes, as the service sent them.
    var document: [UInt8] { get }
    /// The entity tag that validates the document, if the service sent one.
    var etag: EntityTag? { get }
    /// When the document was fetched.
    var fetchedAt: Date { get }
    /// The signed answer the document came in (the JWS), when trusted keys verified it.
    var envelope: [UInt8]? { get }
    /// What the endpoint needs besides the document to read it again (flagd: its bucketing mode).
    var options: String { get }
    /// The flags for `context`, evaluated at `date`: a snapshot as old as the rules, carrying them.
    func snapshot(for context: EvaluationContext, at date: Date) -> FlagSnapshot
    /// Whether `other` holds the same document and tag.
    func isSame(as other: any HeldRules) -> Bool
}

