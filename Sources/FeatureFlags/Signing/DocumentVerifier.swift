package import Foundation

/// A flag document whose signature verified: its bytes and what the protected header said.
package struct VerifiedDocument: Sendable, Equatable {
    /// The signed bytes: the document exactly as the operator wrote it.
    package let payload: [UInt8]
    /// The id of the trusted key that verified it.
    package let keyID: String
    /// When the operator signed it (`iat`, seconds since 1970), if the header says.
    package var issuedAt: Date? { issuedAtSeconds.map(Date.init(timeIntervalSinceReferenceDate:)) }
    /// When it stops being current (`exp`), if the header says.
    package var expiresAt: Date? { expiresAtSeconds.map(Date.init(timeIntervalSinceReferenceDate:)) }
    // Seconds since the reference date, not `Date`: see `Support/FixedLayout.swift`.
    private let issuedAtSeconds: TimeInterval?
    private let expiresAtSeconds: TimeInterval?

    /// A verified document.
    package init(payload: [UInt8], keyID: String, issuedAt: Date?, expiresAt: Date?) {
        self.payload = payload
        self.keyID = keyID
        self.issuedAtSeconds = issuedAt?.timeIntervalSinceReferenceDate
        self.expiresAtSeconds = expiresAt?.timeIntervalSinceReferenceDate
    }
}

/// Why a signed document was refused; names the key id and problem, never the document's values.
package struct SignatureFailure: Error, Equatable, CustomStringConvertible {
    package let description: String
    /// A refusal saying `description`.
    package init(_ description: String) { self.description = description }
}

/// Checks a signed flag document before anything reads it, without naming the algorithm (FeatureFlagsSigning: Ed25519).
package protocol DocumentVerifier: Sendable {
    /// `bytes` (a signed envelope) verified: the document it carries, or why it is refused.
    func verify(_ bytes: [UInt8]) -> Result<VerifiedDocument, SignatureFailure>
}

/// What verifies documents, or why nothing can; not a `Result`, whose runtime type set-up every signed launch would pay.
package enum TrustedVerifier: Sendable {
    /// The keys are usable: this verifies documents against them.
    case ready(any DocumentVerifier)
    /// The keys are unusable, for this reason: every check fails with it.
    case unusable(FlagError)

    /// The verifier, or the reason the keys are unusable.
    package func get() throws(FlagError) -> any DocumentVerifier {
        switch self {
        case .ready(let verifier): return verifier
        case .unusable(let problem): throw problem
        }
    }
}

/// The signing keys a configuration trusts (key id: key text) and the verifier made from them.
package struct SignatureTrust: Sendable {
    /// The keys as configured.
    package let keys: [String: String]
    /// What verifies documents against them, or why they cannot.
    package let verifier: TrustedVerifier

    /// Trust in `keys`, checked by `verifier`.
    package init(keys: [String: String], verifier: TrustedVerifier) {
        self.keys = keys
        self.verifier = verifier
    }
}
