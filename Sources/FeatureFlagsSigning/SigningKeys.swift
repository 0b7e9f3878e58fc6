package import FeatureFlags
import Foundation

/// Ed25519 keys as operators hold them: PEM files as `openssl genpkey -algorithm ed25519`
/// writes them (PKCS #8 private keys, SubjectPublicKeyInfo public keys, RFC 8410), or the raw
/// 32 bytes in base64url (a JWK's `x`).
package enum SigningKeys {
    /// The DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410): the key's 32 bytes follow.
    private static let publicPrefix: [UInt8] = [0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00]
    /// The DER prefix of an Ed25519 PKCS #8 private key (RFC 8410): the 32-byte seed follows.
    private static let privatePrefix: [UInt8] = [
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
    ]

    /// The 32-byte public key in `text`: a `PUBLIC KEY` PEM block, or 43 characters of base64url.
    package static func publicKey(_ text: String) -> [UInt8]? {
        if let der = pem(text, label: "PUBLIC KEY") {
            guard der.count == 44, Array(der.prefix(12)) == publicPrefix else { return nil }
            return Array(der.suffix(32))
        }
        let raw = Base64URL.decode(text.trimmingCharacters(in: .whitespacesAndNewlines))
        return raw?.count == 32 ? raw : nil
    }

    /// The 32-byte private key (seed) in a `PRIVATE KEY` PEM block.
    package static func privateKey(_ text: String) -> [UInt8]? {
        guard let der = pem(text, label: "PRIVATE KEY"), der.count == 48, Array(der.prefix(16)) == privatePrefix else { return nil }
        return Array(der.suffix(32))
    }

    /// A `PUBLIC KEY` PEM block for `key`.
    package static func publicKeyPEM(_ key: [UInt8]) -> String { pemText(publicPrefix + key, label: "PUBLIC KEY") }

    /// A `PRIVATE KEY` PEM block for `seed`.
    package static func privateKeyPEM(_ seed: [UInt8]) -> String { pemText(privatePrefix + seed, label: "PRIVATE KEY") }

    /// The DER bytes of the PEM block labelled `label` in `text`, if there is one.
    private static func pem(_ text: String, label: String) -> [UInt8]? {
        guard let begin = text.range(of: "-----BEGIN \(label)-----"),
            let end = text.range(of: "-----END \(label)-----", range: begin.upperBound..<text.endIndex)
        else { return nil }
        let body = text[begin.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
        return Data(base64Encoded: String(body)).map { Array($0) }
    }

    private static func pemText(_ der: [UInt8], label: String) -> String {
        let body = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN \(label)-----\n\(body)\n-----END \(label)-----\n"
    }
}

/// The Ed25519 public keys an app trusts to sign its flags, by key id (JWS `kid`). Several
/// at once for rotation: a document signed by any of them is accepted.
package struct TrustedKeys: Sendable, Equatable {
    /// Key id and key, sorted by id.
    package let keys: [(id: String, key: [UInt8])]

    /// Keys from `text` by key id (a `PUBLIC KEY` PEM block or base64url each).
    /// - Throws: ``FlagError`` (`GENERAL`) naming the first key that is not an Ed25519 public key.
    package init(_ text: [String: String]) throws(FlagError) {
        var keys: [(id: String, key: [UInt8])] = []
        for id in text.keys.sorted() {
            guard let value = text[id], let key = SigningKeys.publicKey(value) else {
                throw FlagError(.general, "trusted key \"\(id)\" is not an Ed25519 public key (PEM or 32 bytes of base64url)")
            }
            keys.append((id, key))
        }
        self.keys = keys
    }

    /// Whether a document's key id is ignored: every key is tried (a tool checking a file
    /// against one key).
    package private(set) var ignoresKeyIDs = false

    /// No key at all.
    package static let none = TrustedKeys()

    private init() { keys = [] }

    /// These keys, each tried whatever key id a document names.
    package var anyKeyID: TrustedKeys {
        var copy = self
        copy.ignoresKeyIDs = true
        return copy
    }

    package static func == (a: TrustedKeys, b: TrustedKeys) -> Bool {
        a.keys.map(\.id) == b.keys.map(\.id) && a.keys.map(\.key) == b.keys.map(\.key) && a.ignoresKeyIDs == b.ignoresKeyIDs
    }
}
