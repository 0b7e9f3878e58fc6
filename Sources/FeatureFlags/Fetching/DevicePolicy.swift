import Foundation

/// How the device checks what it holds: one policy for fetched answers and the fallback file.
struct DevicePolicy: Sendable {
    /// The keys answers must be signed with (nil: nothing is checked), or why they are unusable.
    let trust: TrustedVerifier?
    /// The endpoints whose answers the file holds, in the app's order.
    let endpoints: [FlagEndpoint]
    /// How the endpoints combine: whether each is a service of a set with its own stored values.
    var strategy: ServiceStrategy = .chain

    /// Whether the endpoints are a set of services, each fetched and stored on its own, combined per flag.
    var servesSet: Bool { strategy != .chain && endpoints.count > 1 }

    /// The names of a set's services, unique: an endpoint's name, or `name_N` (from 1) when several share it.
    var serviceNames: [String] {
        let names = endpoints.map(\.name)
        var counts: [String: Int] = [:]
        var unique: [String] = []
        for name in names {
            var candidate = name
            if names.filter({ $0 == name }).count > 1 {
                counts[name, default: 0] += 1
                candidate = "\(name)_\(counts[name]!)"
            }
            // A given name may equal a numbered one (`json_1`): numbered again, so no two services share a name.
            while unique.contains(candidate) { candidate += "_\(unique.count + 1)" }
            unique.append(candidate)
        }
        return unique
    }

    /// Where the service at `index` keeps `fingerprint`'s values in the fallback file.
    func serviceKey(_ fingerprint: String, service index: Int) -> String { "\(fingerprint)@\(index)/\(serviceNames[index])" }

    /// Why the values stored for the service at `index` may not stand in for it (nil: they may). With trusted keys only
    /// what a trusted key signed does; values evaluated on the device from rules cannot be checked without the rules.
    func heldServiceProblem(_ stored: FlagSnapshot, service index: Int, for context: EvaluationContext) -> String? {
        guard checksSignatures else { return nil }
        let endpoint = endpoints[index]
        if endpoint.format.asLocalEvaluation != nil { return "values evaluated on the device from rules are not checked apart from them" }
        return DevicePolicy(trust: trust, endpoints: [endpoint]).storedSignatureProblem(stored, for: context)
    }

    /// The index of the set's service that sends rules evaluated on the device, if one does.
    var localEvaluationIndex: Int? { endpoints.firstIndex { $0.format.asLocalEvaluation != nil } }

    /// Whether stored answers must be signed.
    var checksSignatures: Bool { trust != nil }

    /// The first endpoint that sends rules evaluated on the device.
    var localEvaluation: (any LocalEvaluationEndpoint)? { localEvaluationIndex.flatMap { endpoints[$0].format.asLocalEvaluation } }

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
