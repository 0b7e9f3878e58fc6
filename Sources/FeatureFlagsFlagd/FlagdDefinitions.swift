import Foundation
package import FeatureFlags


/// A flagd flag-definition document (`https://flagd.dev/schema/v0/flags.json`), parsed and
/// compiled: the rules for every context, evaluated on the device by
/// ``evaluate(for:at:)`` — no service evaluates per user.
///
/// ```json
/// {
///   "flags": {
///     "new-checkout": {
///       "state": "ENABLED",
///       "variants": { "on": true, "off": false },
///       "defaultVariant": "off",
///       "targeting": { "if": [{ "ends_with": [{ "var": "email" }, "@example.com"] }, "on"] }
///     }
///   },
///   "$evaluators": { "staff": { "ends_with": [{ "var": "email" }, "@example.com"] } },
///   "metadata": { "flagSetId": "shop", "version": "42" }
/// }
/// ```
///
/// `flags` is an object by flag key, or a list of flag objects that each carry a `key`.
/// A flag that breaks the format does not take the others down: it is kept as a
/// `PARSE_ERROR` (served as the code default) and listed in ``problems`` with its JSON path.
/// Only a document that is not JSON, or has no usable `flags`, fails as a whole.
package struct FlagdDefinitions: Sendable {
    /// One flag, compiled.
    /// A class, not a struct: evaluating every flag walks the dictionary of them, and a copy of
    /// a reference is one retain where a copy of the fields was a dozen.
    final class Flag: Sendable {
        enum Outcome: Sendable {
            /// Valid: evaluate it.
            case valid(enabled: Bool, variants: [String: FlagValue], defaultVariant: String?, targeting: LogicRule?)
            /// The flag broke the format: every evaluation is `PARSE_ERROR`.
            case invalid(String)
        }
        let outcome: Outcome
        /// Flag-set metadata merged with the flag's own (the flag's win).
        let metadata: [String: FlagValue]
        /// The key's ``FlagNameHash``, for the read table an identify fills.
        let hash: Int
        /// The answer when it does not depend on the context (no targeting, disabled, invalid).
        let constant: Answer?
        /// The answers a rule can give, built once: by variant name (`TARGETING_MATCH`), and
        /// for a rule that gives `null` (the default variant, `DEFAULT`). Empty for a constant.
        let matches: [String: Answer]
        let fallback: Answer?
        /// The context attributes the targeting reads (``RuleDependencies``); nil when
        /// unknown or when the flag is a constant.
        let reads: Set<String>?

        init(key: String, outcome: Outcome, metadata: [String: FlagValue], constant: FlagEntry?) {
            self.outcome = outcome
            self.metadata = metadata
            self.hash = FlagNameHash.of(key)
            self.constant = constant.map(Answer.init)
            if constant == nil, case .valid(_, let variants, let defaultVariant, _) = outcome {
                var matches: [String: Answer] = [:]
                for (name, value) in variants {
                    matches[name] = Answer(FlagEntry(value: value, variant: name, reason: .targetingMatch, metadata: metadata))
                }
                self.matches = matches
                self.fallback = Answer(FlagdDefinitions.resolved(defaultVariant, variants: variants, reason: .default, metadata: metadata))
            } else {
                self.matches = [:]
                self.fallback = nil
            }
            if constant == nil, case .valid(_, _, _, let targeting?) = outcome {
                self.reads = RuleDependencies.of(targeting)
            } else {
                self.reads = nil
            }
        }
    }

    /// An evaluation's result with the extras a read table keeps, made once for the answers a
    /// flag can give (an identify then allocates nothing per flag) and for each error.
    final class Answer: Sendable {
        let entry: FlagEntry
        let extras: FlagExtras?
        init(_ entry: FlagEntry) {
            self.entry = entry
            self.extras = FlagExtras.of(entry)
        }
    }

    /// Flags by key.
    let flags: [String: Flag]
    /// The flags in the one order every evaluation fills its table in, with what each
    /// targeting reads as a bit mask over ``Order/attributes``.
    let order: Order

    /// The flags in a fixed order, each with the attributes its targeting reads as bits (nil:
    /// unknown, or more than 64 distinct names in the document: always evaluated).
    final class Order: Sendable {
        let keys: [String]
        let flags: [Flag]
        let masks: [UInt64?]
        /// Bit `i` stands for `attributes[i]`.
        let attributes: [String]

        init(_ flags: [String: Flag]) {
            var keys: [String] = []
            var ordered: [Flag] = []
            var names: [String: Int] = [:]
            for (key, flag) in flags {
                keys.append(key)
                ordered.append(flag)
                for name in flag.reads ?? [] where names[name] == nil { names[name] = names.count }
            }
            self.keys = keys
            self.flags = ordered
            // In the order first read (each name's number), by sorting the names by it.
            attributes = names.keys.sorted { names[$0, default: 0] < names[$1, default: 0] }
            masks = ordered.map { flag in
                guard let reads = flag.reads, names.count <= 64 else { return nil }
                return reads.reduce(UInt64(0)) { $0 | (1 << UInt64(names[$1]!)) }
            }
        }
    }

    init(
        flags: [String: Flag], problems: [FlagViolation], metadata: [String: FlagValue], bucketing: FractionalBucketing,
        eventStreams: FlagValue?
    ) {
        self.flags = flags
        self.order = Order(flags)
        self.problems = problems
        self.metadata = metadata
        self.bucketing = bucketing
        self.eventStreams = eventStreams
    }
    /// Every problem found, with its JSON path (`flags.beta.defaultVariant`, …), in document order.
    package let problems: [FlagViolation]
    /// The flag set's metadata (`metadata` at the top level).
    package let metadata: [String: FlagValue]
    /// How `fractional` buckets.
    package let bucketing: FractionalBucketing
    /// The document's top-level `eventStreams` (OFREP's form), if any.
    let eventStreams: FlagValue?

    /// The change streams the document names, relative to `base` (the document's URL).
    func streams(base: URL?) -> [EventStreamLink] {
        EventStreamLink.list(from: eventStreams, base: base).links
    }

    /// The flag keys, sorted.
    package var keys: [String] { flags.keys.sorted() }
    /// The flag set's `version` metadata, when it is a string.
    package var version: String? { metadata["version"]?.stringValue }
    /// How many flags have targeting (depend on the context).
    package var targetedCount: Int {
        flags.values.count { flag in
            if case .valid(_, _, _, let targeting?) = flag.outcome, targeting != .value(.null) { return true }
            return false
        }
    }
}

/// Why a whole flag-definition document was refused.
package struct FlagdDocumentError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The problems; the first is the one that stopped parsing.
    package let problems: [FlagViolation]

    /// An error for `problems`.
    package init(_ problems: [FlagViolation]) { self.problems = problems }

    /// The problems, one per line.
    package var description: String { problems.map(\.description).joined(separator: "\n") }
}
