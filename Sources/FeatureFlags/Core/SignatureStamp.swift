package import Foundation

/// What a verified signature said of a document: the trusted key that signed it, when the
/// operator signed it, and until when it counts as current.
package struct SignatureStamp: Sendable, Equatable {
    /// The id of the trusted key that verified it.
    package let keyID: String
    /// When it was signed (the protected header's `iat`), if said: a document signed earlier
    /// than the one held is refused as a rollback.
    package var issuedAt: Date? { issuedAtSeconds.map(Date.init(timeIntervalSinceReferenceDate:)) }
    /// When it stops being current (`exp`), if said: past it, the snapshot is stale.
    package var expiresAt: Date? { expiresAtSeconds.map(Date.init(timeIntervalSinceReferenceDate:)) }
    /// The signed answer as it came (the JWS): kept with the snapshot, so that a launch can
    /// verify again that what the fallback file serves is what the operator signed.
    package let envelope: [UInt8]
    // Seconds since the reference date: a stored `Date` has no fixed layout on Apple
    // platforms (`Support/FixedLayout.swift`).
    private let issuedAtSeconds: TimeInterval?
    private let expiresAtSeconds: TimeInterval?

    /// A stamp.
    package init(keyID: String, issuedAt: Date?, expiresAt: Date?, envelope: [UInt8] = []) {
        self.keyID = keyID
        self.issuedAtSeconds = issuedAt?.timeIntervalSinceReferenceDate
        self.expiresAtSeconds = expiresAt?.timeIntervalSinceReferenceDate
        self.envelope = envelope
    }
}
