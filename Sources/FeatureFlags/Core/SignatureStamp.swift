package import Foundation

/// What a verified signature said of a document: signing key, signing time, expiry.
package struct SignatureStamp: Sendable, Equatable {
    /// The id of the trusted key that verified it.
    package let keyID: String
    /// When it was signed (`iat`), if said: an older document than the one held is a rollback.
    package var issuedAt: Date? { issuedAtSeconds.map(Date.init(timeIntervalSinceReferenceDate:)) }
    /// When it stops being current (`exp`), if said: past it, the snapshot is stale.
    package var expiresAt: Date? { expiresAtSeconds.map(Date.init(timeIntervalSinceReferenceDate:)) }
    /// The signed answer (the JWS), kept so a launch can verify the fallback file again.
    package let envelope: [UInt8]
    // Seconds, not `Date`: `Date` has no fixed layout on Apple platforms (`Support/FixedLayout.swift`).
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
