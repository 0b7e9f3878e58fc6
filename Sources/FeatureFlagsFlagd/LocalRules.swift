package import Foundation
package import FeatureFlags

/// Flag definitions held for evaluation on the device: the document as fetched, its entity
/// tag and fetch time, and the compiled ``FlagdDefinitions``. Kept in the fallback file as
/// one reserved entry (outside the capacity), so an offline relaunch — or an identify to a
/// context never fetched — is evaluated from the last rules the service sent.
package final class LocalRules: Sendable, Equatable {
    /// The compiled definitions.
    package let definitions: FlagdDefinitions
    /// The document's bytes, as the service sent them.
    package let document: [UInt8]
    /// The entity tag that validates the document, if the service sent one.
    package let etag: EntityTag?
    /// When the document was fetched.
    package let fetchedAt: Date
    /// The signed answer the document came in (the JWS), when trusted keys verified it: kept
    /// so that a launch can verify the held rules again.
    package let envelope: [UInt8]?
    /// The last evaluation: its table and context (see ``snapshot(for:at:)``).
    private let last = Locked<(table: FlagTable, context: EvaluationContext)?>(nil)

    /// Rules read from `document`.
    package init(definitions: FlagdDefinitions, document: [UInt8], etag: EntityTag?, fetchedAt: Date, envelope: [UInt8]? = nil) {
        self.definitions = definitions
        self.document = document
        self.etag = etag
        self.fetchedAt = fetchedAt
        self.envelope = envelope
    }

    /// The same document and tag.
    package static func == (lhs: LocalRules, rhs: LocalRules) -> Bool {
        lhs === rhs
            || (lhs.etag == rhs.etag && lhs.fetchedAt == rhs.fetchedAt && lhs.document == rhs.document && lhs.envelope == rhs.envelope)
    }

    /// The flags for `context`, evaluated at `date`: a snapshot as old as the rules (its
    /// ``FlagSnapshot/fetchedAt`` is theirs), carrying them.
    ///
    /// The rules remember the last context they evaluated and its table: a flag whose rule
    /// reads nothing on which that context and `context` differ keeps its answer
    /// (``FlagdDefinitions/evaluatedTable(for:at:reusing:)``) — an identify from one user to
    /// the next evaluates only the flags that depend on what changed.
    package func snapshot(for context: EvaluationContext, at date: Date) -> FlagSnapshot {
        let table = definitions.evaluatedTable(for: context, at: date, reusing: last.withLock { $0 })
        last.withLock { $0 = (table, context) }
        var snapshot = FlagSnapshot(
            storage: FlagSet(table: table), version: definitions.version,
            fetchedAt: fetchedAt, ttl: nil, contextFingerprint: context.fingerprint)
        snapshot.rules = self
        return snapshot
    }
}

extension LocalRules: HeldRules {
    /// The bucketing mode's name: what the document is compiled again with from the fallback file.
    package var options: String { definitions.bucketing.rawValue }

    /// The same document and tag, when `other` is rules too.
    package func isSame(as other: any HeldRules) -> Bool {
        guard let other = other as? LocalRules else { return false }
        return self == other
    }
}

extension FlagSnapshot {
    /// The flag definitions it was evaluated from on the device, if it was.
    package var rules: LocalRules? {
        get { heldRules as? LocalRules }
        set { heldRules = newValue }
    }
}
