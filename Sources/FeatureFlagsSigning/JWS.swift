package import FeatureFlags
package import Foundation

/// JSON Web Signature (RFC 7515) over Ed25519: the envelope of a signed flag document. Written
/// with `"alg": "Ed25519"`, the fully specified identifier of RFC 9864; read with it or with
/// `"EdDSA"` (RFC 8037, which RFC 9864 deprecates but most signers still write: with a trusted
/// key that can only be Ed25519, the two mean the same operation). Both serialisations are
/// read — compact (`header.payload.signature`) and JSON (flattened, or general with several
/// signatures: one by a trusted key suffices) — and compact is written. The signed bytes are
/// the document's bytes: no canonical JSON.
///
/// The protected header may carry `kid` (which trusted key; without it every trusted key is
/// tried), `iat` and `exp` (seconds since 1970, replicated as header parameters as RFC 7519
/// section 5.3 allows). Refused: any other `alg` (`none` and `Ed448` included), a `crit`
/// header (no extension is understood, so RFC 7515 section 4.1.11 requires refusing), `kid`,
/// `iat` or `exp` of the wrong type, malformed base64url or JSON, an unknown key id, a
/// signature that does not verify.
package enum JWS {
    /// The largest protected header read (a header is a few dozen bytes).
    static let maxHeaderBytes = 4_096

    /// `bytes` verified against `keys`.
    package static func verify(_ bytes: [UInt8], trusting keys: TrustedKeys) -> Result<VerifiedDocument, SignatureFailure> {
        let text = trimmed(bytes)
        guard let first = text.first else { return .failure(SignatureFailure("an empty answer is not a signed document")) }
        let candidates: [Part]
        if first == UInt8(ascii: "{") {
            switch jsonSerialisation(text) {
            case .success(let found): candidates = found
            case .failure(let failure): return .failure(failure)
            }
        } else {
            let parts = text.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
            guard parts.count == 3 else {
                return .failure(SignatureFailure("not a signed document (JWS): unsigned flags are refused while trusted keys are configured"))
            }
            candidates = [Part(protected: parts[0], payload: parts[1], signature: parts[2], kid: nil)]
        }
        var last = SignatureFailure("no signature")
        for candidate in candidates {
            switch check(candidate.protected, candidate.payload, candidate.signature, unprotectedKeyID: candidate.kid, keys: keys) {
            case .success(let document): return .success(document)
            case .failure(let failure): last = failure
            }
        }
        return .failure(last)
    }

    /// `payload` signed with `seed` as compact JWS, with `kid`, `iat` and `exp` in the
    /// protected header when given.
    package static func sign(
        _ payload: [UInt8], seed: [UInt8], publicKey: [UInt8]? = nil, keyID: String?, issuedAt: Date? = nil, expiresAt: Date? = nil
    ) -> [UInt8] {
        var header: [String: FlagValue] = ["alg": "Ed25519"]
        if let keyID { header["kid"] = .string(keyID) }
        // Clamped: a date beyond `Int` seconds (a caller's "never") must not trap.
        if let issuedAt { header["iat"] = .int(issuedAt.timeIntervalSince1970.rounded(.down).roundedClampedToInt) }
        if let expiresAt { header["exp"] = .int(expiresAt.timeIntervalSince1970.rounded(.down).roundedClampedToInt) }
        let input = Base64URL.encode(FlagJSON.bytes(.object(header), sortedKeys: true)) + "." + Base64URL.encode(payload)
        let signature = Ed25519.sign(Array(input.utf8), seed: seed, publicKey: publicKey)
        return Array((input + "." + Base64URL.encode(signature)).utf8)
    }

    /// One signature's parts as they were sent (base64url), with the `kid` of an unprotected header.
    private struct Part {
        let protected: ArraySlice<UInt8>
        let payload: ArraySlice<UInt8>
        let signature: ArraySlice<UInt8>
        let kid: String?
    }

    private static func trimmed(_ bytes: [UInt8]) -> ArraySlice<UInt8> {
        // A function, not a `Set` literal: building a `Set<UInt8>` looks `UInt8: Hashable` up
        // at run time on a signed launch's path.
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0a || byte == 0x0d }
        var slice = bytes[...]
        while let f = slice.first, isSpace(f) { slice = slice.dropFirst() }
        while let l = slice.last, isSpace(l) { slice = slice.dropLast() }
        return slice
    }

    /// The signatures of a JSON serialisation (flattened or general), each with the `kid` of
    /// its unprotected header.
    private static func jsonSerialisation(
        _ text: ArraySlice<UInt8>
    ) -> Result<[Part], SignatureFailure> {
        guard case .object(let top)? = try? FlagJSON.parse(text) else {
            return .failure(SignatureFailure("not a signed document (JWS): unsigned flags are refused while trusted keys are configured"))
        }
        guard case .string(let payload)? = top["payload"] else {
            return .failure(SignatureFailure("not a signed document (JWS): no \"payload\"; unsigned flags are refused while trusted keys are configured"))
        }
        var entries: [[String: FlagValue]] = []
        if case .list(let signatures)? = top["signatures"] {
            for case .object(let entry) in signatures { entries.append(entry) }
        } else {
            entries.append(top)
        }
        var found: [Part] = []
        for entry in entries {
            guard case .string(let protected)? = entry["protected"], case .string(let signature)? = entry["signature"] else {
                return .failure(SignatureFailure("malformed JWS: a signature without \"protected\" and \"signature\""))
            }
            var kid: String?
            if case .object(let header)? = entry["header"], case .string(let id)? = header["kid"] { kid = id }
            found.append(Part(protected: Array(protected.utf8)[...], payload: Array(payload.utf8)[...], signature: Array(signature.utf8)[...], kid: kid))
        }
        guard !found.isEmpty else { return .failure(SignatureFailure("malformed JWS: no signatures")) }
        return .success(found)
    }

    private static func check(
        _ protectedText: ArraySlice<UInt8>, _ payloadText: ArraySlice<UInt8>, _ signatureText: ArraySlice<UInt8>,
        unprotectedKeyID: String?, keys: TrustedKeys
    ) -> Result<VerifiedDocument, SignatureFailure> {
        guard protectedText.count <= maxHeaderBytes * 4 / 3 + 4, let headerBytes = Base64URL.decode(protectedText),
            let signature = Base64URL.decode(signatureText), let payload = Base64URL.decode(payloadText)
        else {
            return .failure(SignatureFailure("malformed JWS: a part is not base64url"))
        }
        guard case .object(let header)? = try? FlagJSON.parse(headerBytes) else {
            return .failure(SignatureFailure("malformed JWS: the protected header is not a JSON object"))
        }
        guard case .string(let alg)? = header["alg"] else { return .failure(SignatureFailure("malformed JWS: no \"alg\"")) }
        guard alg == "Ed25519" || alg == "EdDSA" else {
            return .failure(SignatureFailure("unsupported algorithm \"\(alg.prefix(32))\" (only Ed25519 is accepted: \"Ed25519\" or \"EdDSA\")"))
        }
        guard header["crit"] == nil else { return .failure(SignatureFailure("unsupported critical header parameters (\"crit\")")) }
        var kid = unprotectedKeyID
        switch header["kid"] {
        case nil: break
        case .string(let id)?: kid = id
        default: return .failure(SignatureFailure("malformed JWS: \"kid\" is not a string"))
        }
        var times: [Date?] = []
        for name in ["iat", "exp"] {
            switch header[name] {
            case nil: times.append(nil)
            case .int(let seconds)?: times.append(Date(timeIntervalSince1970: TimeInterval(seconds)))
            case .double(let seconds)? where seconds.isFinite: times.append(Date(timeIntervalSince1970: seconds))
            default: return .failure(SignatureFailure("malformed JWS: \"\(name)\" is not a number of seconds"))
            }
        }
        let candidates = (keys.ignoresKeyIDs ? nil : kid).map { id in keys.keys.filter { $0.id == id } } ?? keys.keys
        guard !candidates.isEmpty else {
            return .failure(SignatureFailure("unknown key id \"\(kid.map { String($0.prefix(64)) } ?? "")\""))
        }
        let input = Array(protectedText) + [UInt8(ascii: ".")] + Array(payloadText)
        for candidate in candidates where Ed25519.verify(signature: signature, of: input, publicKey: candidate.key) {
            let id = keys.ignoresKeyIDs ? kid ?? "" : candidate.id
            return .success(VerifiedDocument(payload: payload, keyID: id, issuedAt: times[0], expiresAt: times[1]))
        }
        return .failure(SignatureFailure(
            kid.map { "bad signature (key \"\(String($0.prefix(64)))\")" } ?? "bad signature (no trusted key verifies it)"))
    }
}
