/// Validation before activation, with memory: a payload breaking the ``FlagSchema`` is rejected whole; one equal (`==`,
/// never a hash) to the last judged for the context is not validated again. Pure: the caller keeps the memory.
enum PayloadGate {
    /// What the gate decided.
    enum Verdict: Sendable, Equatable {
        /// Serve it; `unknownKeys` (empty if judged before or no schema) lack a rule.
        case accepted(unknownKeys: [String])
        /// Keep the Last-Known-Good.
        case rejected(Rejection)
    }

    /// A rejected payload, as remembered.
    struct Rejection: Sendable, Equatable {
        /// Every broken rule.
        let violations: [FlagViolation]
        /// The payload's fingerprint.
        let fingerprint: String
        /// Whether it turns the kill switch on: honoured even though the rest is rejected.
        let killSwitchOn: Bool
        /// True when this payload was judged before (no event is due again).
        var remembered: Bool
    }

    /// The last payload judged for one context, and the verdict.
    struct Memory: Sendable, Equatable {
        /// The flags last judged.
        let flags: [String: FlagEntry]
        /// The rejection, when they were rejected; nil when accepted.
        let rejection: Rejection?
        /// A rejected payload's entity tag, sent next time so an unchanged service answers 304.
        let rejectedETag: EntityTag?
    }

    /// Judges `snapshot` against `schema`: the verdict, the memory to keep, and whether the schema ran.
    static func judge(
        _ snapshot: FlagSnapshot, etag: EntityTag?, schema: FlagSchema?, killSwitchKey: String, memory: Memory?
    ) -> (verdict: Verdict, memory: Memory?, validated: Bool) {
        guard let schema else { return (.accepted(unknownKeys: []), nil, false) }
        let flags = snapshot.flags
        if let memory, memory.flags == flags {
            return (standingRejection(memory).map { .rejected($0) } ?? .accepted(unknownKeys: []), memory, false)
        }
        let payloadBytes = schema.maxPayloadBytes == nil ? nil : FlagJSON.bytes(values(flags)).count
        let report = schema.validate(flags, payloadBytes: payloadBytes)
        if report.isValid {
            return (.accepted(unknownKeys: report.unknownKeys), Memory(flags: flags, rejection: nil, rejectedETag: nil), true)
        }
        let rejection = Rejection(
            violations: report.violations, fingerprint: fingerprint(flags),
            killSwitchOn: snapshot.isKillSwitchOn(key: killSwitchKey), remembered: false)
        return (.rejected(rejection), Memory(flags: flags, rejection: rejection, rejectedETag: etag), true)
    }

    /// The rejection in `memory`: what a 304 to the rejected payload's tag means.
    static func standingRejection(_ memory: Memory?) -> Rejection? {
        guard var rejection = memory?.rejection else { return nil }
        rejection.remembered = true
        return rejection
    }

    private static func values(_ flags: [String: FlagEntry]) -> FlagValue {
        .object(flags.compactMapValues(\.value))
    }

    /// The first 64 bits of a SHA-256 over the values in canonical JSON, as 16 hex digits.
    static func fingerprint(_ flags: [String: FlagEntry]) -> String {
        String(SHA256.hex(Array("featureflags.payload.v1\n".utf8) + FlagJSON.bytes(values(flags), sortedKeys: true)).prefix(16))
    }
}
