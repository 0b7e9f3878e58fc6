public import Foundation

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

/// An immutable, complete set of evaluated flags for one context: what a service answered,
/// when, and how long it stays fresh. Where it is being served from is not part of the data:
/// ask ``FlagDetails/source`` (or a client's status) for that.
public struct FlagSnapshot: Sendable, Equatable {
    /// The flags by name.
    public var flags: [String: FlagEntry] { storage.dictionary }
    /// The flags, as a dictionary, a read table or both (each built from the other when first
    /// asked for): a snapshot loaded from disk is decoded straight into the table reads use.
    package let storage: FlagSet
    /// The configuration version the service reported, if it reports one.
    public let version: String?
    /// When the data was fetched from its service (kept when persisted and reloaded).
    public var fetchedAt: Date { Date(timeIntervalSinceReferenceDate: fetchedAtSeconds) }
    /// ``fetchedAt`` as seconds since the reference date: a stored `Date` has no fixed layout
    /// on Apple platforms (`Support/FixedLayout.swift`).
    private let fetchedAtSeconds: TimeInterval
    /// How long the data counts as fresh, in seconds; nil for "no expiry".
    public let ttl: TimeInterval?
    /// The fingerprint of the context it was evaluated for, if any.
    public let contextFingerprint: String?
    /// The flag definitions it was evaluated from on the device, if it was (local evaluation):
    /// kept with it so another context can be evaluated without the network. Held as
    /// ``HeldRules`` so that the core names nothing of local evaluation (`rules`, in
    /// LocalEvaluation, is the typed view).
    package var heldRules: (any HeldRules)?
    /// What the signature of the document it came from said, when trusted keys verified one:
    /// rollback and freeze are judged on it.
    package var signature: SignatureStamp?
    /// Whether a flag this snapshot lacks is off: its service leaves disabled flags out of its
    /// answers (Unleash's frontend API), so a flag missing here was turned off, not forgotten.
    /// A `Bool` read of a missing flag then returns `false` with reason `DISABLED`, whatever
    /// the key's default — turning a flag off on the server turns the feature off even where
    /// the code's default is `true` — and a read of another type returns its default with
    /// reason `DISABLED` (no `FLAG_NOT_FOUND`: such a service cannot tell a disabled flag from
    /// an unknown one). Bundled defaults fill in only values that are not `Bool`. Kept in the
    /// fallback file and the crash-loop journal with the values.
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

    /// Equal when they hold the same flags, version, fetch time, TTL, context and rules, and
    /// read missing flags the same way.
    public static func == (a: FlagSnapshot, b: FlagSnapshot) -> Bool {
        a.version == b.version && a.fetchedAtSeconds == b.fetchedAtSeconds && a.ttl == b.ttl && a.contextFingerprint == b.contextFingerprint
            && a.missingFlagsAreOff == b.missingFlagsAreOff && HeldRulesIdentity.same(a.heldRules, b.heldRules)
            && a.signature == b.signature && a.storage.sameEntries(as: b.storage)
    }

    /// Seconds since ``fetchedAt`` (never negative).
    public func age(at now: Date) -> TimeInterval { max(0, signedAge(at: now)) }

    /// The age unclamped: negative when the snapshot was stamped after `now` (the clock was set
    /// back since), for what reports it.
    func signedAge(at now: Date) -> TimeInterval { now.timeIntervalSinceReferenceDate - fetchedAtSeconds }

    /// Whether the data is older than its ``ttl`` — or its age cannot be told: a snapshot
    /// with a TTL stamped more than 60 seconds after `now` was stamped by a clock
    /// that has since been set back (by the user, or by a time sync correcting a clock that ran
    /// ahead), so its real age is unknown and it is not called fresh.
    public func isExpired(at now: Date) -> Bool {
        // A signed document past its expiry is stale whatever its TTL: an old signed document
        // replayed forever (a freeze) must not pass for current.
        if let expiresAt = signature?.expiresAt, now >= expiresAt { return true }
        guard let ttl else { return false }
        if fetchedAtSeconds - now.timeIntervalSinceReferenceDate > Self.clockSkewTolerance { return true }
        return age(at: now) > ttl
    }

    /// How far in the future a snapshot's fetch time may lie before its age counts as unknown
    /// (``isExpired(at:)``): more than a time sync's usual correction.
    static let clockSkewTolerance: TimeInterval = 60

    /// Seconds from `now` until ``isExpired(at:)`` turns true: nil when it never will (no TTL,
    /// no signed expiry) or already has.
    func secondsUntilExpiry(at now: Date) -> TimeInterval? {
        guard !isExpired(at: now) else { return nil }
        var remaining: TimeInterval?
        if let expiresAt = signature?.expiresAt { remaining = expiresAt.timeIntervalSince(now) }
        if let ttl { remaining = min(remaining ?? .infinity, ttl - age(at: now)) }
        return remaining.flatMap { $0.isFinite ? max(0, $0) : nil }
    }

    /// Whether `killSwitchKey` is `true` in this snapshot.
    public func isKillSwitchOn(key killSwitchKey: String) -> Bool {
        storage.entry(killSwitchKey)?.value == .bool(true)
    }

    /// The same data fetched again at `date` (what a service's "not modified" means). The
    /// signature's stamp stays, expiry and all: a 304 is not signed, so it renews the fetch
    /// time but not the operator's word on how long the document is current.
    func refetched(at date: Date) -> FlagSnapshot {
        var again = FlagSnapshot(storage: storage, version: version, fetchedAt: date, ttl: ttl, contextFingerprint: contextFingerprint)
        again.heldRules = heldRules
        again.signature = signature
        again.missingFlagsAreOff = missingFlagsAreOff
        return again
    }
}

/// Rules a snapshot was evaluated from on the device: the core's seam to local evaluation
/// (flagd's, in `FeatureFlagsFlagd`), which conforms its rules type. The core carries and
/// compares them, keeps what they were read from in the fallback file, checks their
/// signature, and asks them for a context's values; it reads nothing of the rules themselves.
package protocol HeldRules: AnyObject, Sendable {
    /// The document's bytes, as the service sent them.
    var document: [UInt8] { get }
    /// The entity tag that validates the document, if the service sent one.
    var etag: EntityTag? { get }
    /// When the document was fetched.
    var fetchedAt: Date { get }
    /// The signed answer the document came in (the JWS), when trusted keys verified it.
    var envelope: [UInt8]? { get }
    /// What the endpoint needs besides the document to read it again (flagd: its bucketing
    /// mode's name); kept with the document in the fallback file.
    var options: String { get }
    /// The flags for `context`, evaluated at `date`: a snapshot as old as the rules, carrying them.
    func snapshot(for context: EvaluationContext, at date: Date) -> FlagSnapshot
    /// Whether `other` holds the same document and tag.
    func isSame(as other: any HeldRules) -> Bool
}

/// Equality of optional held rules.
enum HeldRulesIdentity {
    static func same(_ a: (any HeldRules)?, _ b: (any HeldRules)?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (let x?, let y?): return x === y || x.isSame(as: y)
        default: return false
        }
    }
}
