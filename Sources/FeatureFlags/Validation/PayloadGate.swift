/// Validation before activation, with memory: every fetched payload passes through here
/// before it can be served. A payload that breaks the ``FlagSchema`` is rejected whole; one
/// identical to the payload last judged for the same context is not validated again — a
/// rejected payload stays rejected on every poll until the service sends something else,
/// without re-running the checks or repeating the event.
///
/// Pure: the memory is a value the caller keeps (the provider keeps one per member context in
/// its state) and passes back in. Identity is exact: the remembered flags are compared with
/// `==` (a hash alone could let a colliding payload skip validation). The fingerprint reported
/// in events is a SHA-256 of the payload's values in canonical JSON, so logs can tell
/// payloads apart.
package enum PayloadGate {
    /// What the gate decided.
    package enum Verdict: Sendable, Equatable {
        /// Serve it. `unknownKeys` lists flags the schema has no rule for (empty when the
        /// payload was judged before, or there is no schema).
        case accepted(unknownKeys: [String])
        /// Keep the Last-Known-Good.
        case rejected(Rejection)
    }

    /// A rejected payload, as remembered.
    package struct Rejection: Sendable, Equatable {
        /// Every broken rule.
        package let violations: [FlagViolation]
        /// The payload's fingerprint.
        package let fingerprint: String
        /// Whether the payload asks for the kill switch (`true`): honoured even though the
        /// rest is rejected, so a broken payload can never block an emergency stop.
        package let killSwitchOn: Bool
        /// True when this payload was judged before (no event is due again).
        package var remembered: Bool
    }

    /// What the gate remembers of one context: the last payload it judged and the verdict.
    package struct Memory: Sendable, Equatable {
        /// The flags last judged.
        package let flags: [String: FlagEntry]
        /// The rejection, when they were rejected; nil when accepted.
        package let rejection: Rejection?
        /// The entity tag of a rejected payload: sent with the next request, so that a service
        /// still holding it answers 304 and nothing is downloaded or judged again.
        package let rejectedETag: EntityTag?
    }

    /// Judges `snapshot` (fetched with `etag`) against `schema`, remembering `memory`. Returns
    /// the verdict, the memory to keep, and whether the schema actually ran.
    package static func judge(
        _ snapshot: FlagSnapshot, etag: EntityTag?, schema: FlagSchema?, killSwitchKey: String, memory: Memory?
    ) -> (verdict: Verdict, memory: Memory?, validated: Bool) {
        guard let schema else { return (.accepted(unknownKeys: []), nil, false) }
        let flags = snapshot.flags
        if let memory, memory.flags == flags {
            guard var rejection = memory.rejection else { return (.accepted(unknownKeys: []), memory, false) }
            rejection.remembered = true
            return (.rejected(rejection), memory, false)
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

    /// The rejection standing in `memory` — what a 304 Not Modified to the rejected payload's
    /// tag means: the service still has that payload.
    package static func standingRejection(_ memory: Memory?) -> Rejection? {
        guard var rejection = memory?.rejection else { return nil }
        rejection.remembered = true
        return rejection
    }

    private static func values(_ flags: [String: FlagEntry]) -> FlagValue {
        .object(flags.compactMapValues(\.value))
    }

    /// The first 64 bits of a SHA-256 over the values in canonical JSON, as 16 hex digits.
    package static func fingerprint(_ flags: [String: FlagEntry]) -> String {
        String(SHA256.hex(Array("featureflags.payload.v1\n".utf8) + FlagJSON.bytes(values(flags), sortedKeys: true)).prefix(16))
    }
}
