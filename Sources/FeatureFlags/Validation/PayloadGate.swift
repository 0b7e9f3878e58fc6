/// Validation before activation (seed 000 §6.4), with memory: every fetched payload passes
/// through here before it can be served. A payload that breaks the ``FlagSchema`` is
/// rejected whole; one identical to a payload already judged for the same context is not
/// validated again — a rejected payload stays rejected on every poll until the service
/// sends something else, without re-running the checks or repeating the event.
///
/// Identity is exact: the remembered flags are compared with `==` (a hash alone could let a
/// colliding payload skip validation). The fingerprint reported in events is a SHA-256 of
/// the payload's values in canonical JSON, so logs can tell payloads apart.
package final class PayloadGate: Sendable {
    /// What the gate decided.
    package enum Verdict: Sendable {
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

    private struct Memory {
        var accepted: [String: [String: FlagEntry]] = [:]
        var rejected: [String: (flags: [String: FlagEntry], rejection: Rejection)] = [:]
        var validations = 0
    }

    /// The schema; nil accepts everything without keeping memory.
    package let schema: FlagSchema?
    private let killSwitchKey: String
    private let memory = Locked(Memory())

    /// A gate for `schema`.
    package init(schema: FlagSchema?, killSwitchKey: String) {
        self.schema = schema
        self.killSwitchKey = killSwitchKey
    }

    /// Judges `snapshot`, fetched for the context with fingerprint `context`.
    package func check(_ snapshot: FlagSnapshot, context: String) -> Verdict {
        guard let schema else { return .accepted(unknownKeys: []) }
        let flags = snapshot.flags
        let known: Verdict? = memory.withLock { m in
            if let previous = m.rejected[context], previous.flags == flags {
                var rejection = previous.rejection
                rejection.remembered = true
                return .rejected(rejection)
            }
            if m.accepted[context] == flags { return .accepted(unknownKeys: []) }
            m.validations += 1
            return nil
        }
        if let known { return known }

        let payloadBytes = schema.maxPayloadBytes == nil ? nil : FlagJSON.bytes(Self.values(flags)).count
        let report = schema.validate(flags, payloadBytes: payloadBytes)
        if report.isValid {
            memory.withLock { m in
                m.accepted[context] = flags
                m.rejected[context] = nil
            }
            return .accepted(unknownKeys: report.unknownKeys)
        }
        let rejection = Rejection(
            violations: report.violations, fingerprint: Self.fingerprint(flags),
            killSwitchOn: snapshot.isKillSwitchOn(key: killSwitchKey), remembered: false)
        memory.withLock { $0.rejected[context] = (flags, rejection) }
        return .rejected(rejection)
    }

    /// The rejection standing for `context`, if its last judged payload was rejected — what a
    /// 304 Not Modified means after a rejection: the service still has that payload.
    package func standingRejection(context: String) -> Rejection? {
        memory.withLock { m in
            guard var rejection = m.rejected[context]?.rejection else { return nil }
            rejection.remembered = true
            return rejection
        }
    }

    /// How many payloads were validated (judged payloads seen again are not counted).
    package var validationCount: Int { memory.withLock { $0.validations } }

    /// Forgets every context but `kept` (called when the provider's identity changes).
    package func forget(allBut kept: Set<String>) {
        memory.withLock { m in
            m.accepted = m.accepted.filter { kept.contains($0.key) }
            m.rejected = m.rejected.filter { kept.contains($0.key) }
        }
    }

    private static func values(_ flags: [String: FlagEntry]) -> FlagValue {
        .object(flags.compactMapValues(\.value))
    }

    /// The first 64 bits of a SHA-256 over the values in canonical JSON, as 16 hex digits.
    package static func fingerprint(_ flags: [String: FlagEntry]) -> String {
        String(SHA256.hex(Array("featureflags.payload.v1\n".utf8) + FlagJSON.bytes(values(flags), sortedKeys: true)).prefix(16))
    }
}
