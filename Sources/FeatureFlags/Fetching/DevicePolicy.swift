import Foundation

/// How the device checks what it holds: one policy for fetched answers and the fallback file.
struct DevicePolicy: Sendable {
    /// The keys answers must be signed with (nil: nothing is checked), or why they are unusable.
    let trust: TrustedVerifier?
    /// The endpoints whose answers the file holds, in the app's order.
    let endpoints: [FlagEndpoint]

    /// Whether stored answers must be signed.
    var checksSignatures: Bool { trust != nil }

    /// The first endpoint that sends rules evaluated on the device.
    var localEvaluation: (any LocalEvaluationEndpoint)? {
        for endpoint in endpoints { if let local = endpoint.format.asLocalEvaluation { return local } }
        return nil
    }

    /// Whether an endpoint sends rules evaluated on the device.
    var evaluatesLocally: Bool { localEvaluation != nil }

    /// Why `stored` is not what a trusted key signed (exactly its flags); nil when it is or without keys.
    func storedSignatureProblem(_ stored: FlagSnapshot, for context: EvaluationContext) -> String? {
        guard let trust, !evaluatesLocally else { return nil }
        guard case .ready(let keys) = trust else { return "the trusted keys are unusable" }
        guard let stamp = stored.signature, !stamp.envelope.isEmpty else {
            return "the stored snapshot carries no signature (stored before trusted keys were configured, or edited)"
        }
        let verified: VerifiedDocument
        switch keys.verify(stamp.envelope) {
        case .success(let document): verified = document
        case .failure(let failure): return "its signature does not verify: \(failure.description)"
        }
        guard verified.issuedAt == stamp.issuedAt, verified.expiresAt == stamp.expiresAt else {
            return "its signing time or expiry differs from its signature's"
        }
        let response = FlagResponse(status: 200, body: verified.payload)
        for endpoint in endpoints where endpoint.format.asLocalEvaluation == nil {
            guard let flags = (try? endpoint.decode(response, for: context))?.flags else { continue }
            if FlagSet(flags).sameEntries(as: stored.storage) { return nil }
        }
        return "its values differ from the signed document's"
    }

    /// Why held `rules` are not what a trusted key signed; nil when they are or without keys.
    func heldRulesSignatureProblem(_ rules: any HeldRules) -> String? {
        guard let trust else { return nil }
        guard case .ready(let keys) = trust else { return "the trusted keys are unusable" }
        guard let envelope = rules.envelope else {
            return "the held rules carry no signature (held before trusted keys were configured, or edited)"
        }
        switch keys.verify(envelope) {
        case .success(let verified):
            return verified.payload == rules.document ? nil : "the held rules differ from their signed document"
        case .failure(let failure):
            return "their signature does not verify: \(failure.description)"
        }
    }
}
