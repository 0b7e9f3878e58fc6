package import Foundation

/// What a verified signature said of a document: the trusted key that signed it, when the
/// operator signed it, and until when it counts as current.
package struct SignatureStamp: Sendable, Equatable {
    /// The id of the trusted key that verified it.
    package let keyID: String
    /// When it was signed (the protected header's `iat`), if said: a document signed earlier
    /// than the one held is refused as a rollback.
    package let issuedAt: Date?
    /// When it stops being current (`exp`), if said: past it, the snapshot is stale.
    package let expiresAt: Date?
    /// The signed answer as it came (the JWS): kept with the snapshot, so that a launch can
    /// verify again that what the fallback file serves is what the operator signed.
    package let envelope: [UInt8]

    /// A stamp.
    package init(keyID: String, issuedAt: Date?, expiresAt: Date?, envelope: [UInt8] = []) {
        self.keyID = keyID
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.envelope = envelope
    }
}
