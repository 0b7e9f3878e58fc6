import FeatureFlags

/// How flagd's `fractional` maps a bucketing value's hash to a bucket.
public enum FractionalBucketing: String, Sendable, CaseIterable {
    /// flagd's current bucketing (its Go evaluator and test bed): the bucketing value must be
    /// a string, hashed as UTF-8 (MurmurHash3 x86 32); `(hash × totalWeight) >> 32` in
    /// integers — any weight ≥ 1 gets its share, down to 1 in 2³¹−1. The default.
    case highPrecision = "high-precision"
    /// flagd's accepted ADR "fractional-non-string-rand-units": the bucketing value may be a
    /// string, number, Boolean or object; it is encoded as deterministic CBOR (numbers whole
    /// in [−2⁶³, 2⁶⁴−1] as integers) and those bytes are hashed; the shorthand hashes the list
    /// `[flagKey, targetingKey]`; `null`, a missing or empty targeting key are errors. Then the
    /// same high-precision bucketing. Everyone lands in a new bucket once when switching.
    case cbor = "cbor"
    /// flagd's earlier bucketing: `|Int32(hash)| ÷ Int32.max × 100`, compared with each
    /// variant's percentage (`100 × weight ÷ totalWeight`) in floating point. For rule files
    /// whose users must keep the buckets an older flagd gave them.
    case legacyPercent = "legacy-percent"
}

/// flagd's own JsonLogic operations, on arguments JsonLogic has already evaluated. Invalid
/// input yields `null` (never `false`), so a rule falls back to the default variant instead of
/// naming a variant "false".
enum FlagdOperators {
    /// `fractional`: `[bucketBy?, [variant, weight?], …]`.
    ///
    /// - The first argument, when it is not a bucket (a list), is the bucketing value. In the
    ///   string modes a string is hashed as it is and anything else (a number, `null` from a
    ///   missing `var`) is dropped for the default, `$flagd.flagKey` followed by `targetingKey`;
    ///   in the CBOR mode see ``FractionalBucketing/cbor``.
    /// - A bucket is `[variant]` or `[variant, weight]`: the variant a string, Boolean, number
    ///   or `null`; the weight a whole number (default 1, negative counts as 0); weights are
    ///   relative and their sum at most `Int32.max`.
    /// - Without a bucketing value (no string given, no `targetingKey` or an empty one) the answer is `null`,
    ///   even when every bit of weight is in one bucket (flagd's test bed: a single bucket
    ///   answers for any value, but only when there is a value).
    static func fractional(_ arguments: [FlagValue], scope: LogicScope) -> FlagValue {
        guard !arguments.isEmpty else { return .null }
        var buckets = arguments[...]
        var first: FlagValue?
        if case .list = arguments[0] {} else {
            first = arguments[0]
            buckets = buckets.dropFirst()
        }
        var variants: [(variant: FlagValue, weight: UInt64)] = []
        var total: UInt64 = 0
        for bucket in buckets {
            guard case .list(let pair) = bucket, let variant = pair.first else { return .null }
            switch variant {
            case .string, .bool, .int, .double, .null: break
            default: return .null
            }
            var weight: Int64 = 1
            if pair.count >= 2 {
                switch pair[1] {
                case .int(let whole): weight = Int64(whole)
                case .double(let number):
                    guard number.isFinite, number == number.rounded(), abs(number) < 9.2e18 else { return .null }
                    weight = Int64(number)
                case .null: break
                default: return .null
                }
            }
            guard weight <= Int64(Int32.max) else { return .null }
            let kept = UInt64(max(0, weight))
            total += kept
            guard total <= UInt64(Int32.max) else { return .null }
            variants.append((variant, kept))
        }
        guard total > 0 else { return .null }
        let hash: UInt32
        switch scope.bucketing {
        case .cbor:
            // The ADR: a value other than null is encoded and hashed; without one, the list
            // [flagKey, targetingKey] (a non-empty string); anything else is an error.
            let value: FlagValue
            if let first {
                guard first != .null else { return .null }
                value = first
            } else {
                guard case .string(let key)? = scope.context["targetingKey"], !key.isEmpty else { return .null }
                value = .list([.string(scope.flagKey), .string(key)])
            }
            hash = MurmurHash3.x86_32(DeterministicCBOR.encode(value))
        case .highPrecision, .legacyPercent:
            // A string is hashed as it is; anything else is dropped for `$flagd.flagKey`
            // followed by `targetingKey`.
            var bucketBy: String?
            if case .string(let text)? = first { bucketBy = text }
            // An empty targeting key is no key (flagd's evaluators agree: the default variant).
            if bucketBy == nil, case .string(let key)? = scope.context["targetingKey"], !key.isEmpty {
                bucketBy = scope.flagKey + key
            }
            guard let bucketBy else { return .null }
            hash = MurmurHash3.x86_32(bucketBy)
        }
        if scope.bucketing == .legacyPercent {
            let signed = Int32(bitPattern: hash)
            let bucket = abs(Double(signed)) / Double(Int32.max) * 100
            var end = 0.0
            for (variant, weight) in variants {
                end += 100 * Double(weight) / Double(total)
                if bucket < end { return variant }
            }
            return .null
        }
        let bucket = (UInt64(hash) * total) >> 32
        var end: UInt64 = 0
        for (variant, weight) in variants {
            end += weight
            if bucket < end { return variant }
        }
        return .null
    }

    /// `sem_ver`: `[version, operator, version]` → whether the first version stands in that
    /// relation to the second; `null` when an argument is missing, not a version or not an
    /// operator. Numbers are versions too, as flagd prints them (`2`, `1.2`).
    static func semanticVersion(_ arguments: [FlagValue], parsed cache: EvaluationBudget) -> FlagValue {
        guard arguments.count == 3, case .string(let op) = arguments[1],
            let left = versionText(arguments[0]), let right = versionText(arguments[2]),
            let a = cache.version(left), let b = cache.version(right), let result = a.matches(op, b)
        else { return .null }
        return .bool(result)
    }

    /// A `sem_ver` argument as text: a string as it is; a number as flagd's Go evaluator
    /// prints it (`fmt`'s `%v` of the `float64` every JSON number is there: `2` → "2", `1.2` →
    /// "1.2", `1.0` → "1", and an integer of a million or more in exponent form, `1e+06`, which
    /// is no version); nil for anything else.
    static func versionText(_ value: FlagValue) -> String? {
        switch value {
        case .string(let text): return text
        case .int(let whole): return GoNumberText.shortest(Double(whole))
        case .double(let number): return GoNumberText.shortest(number)
        default: return nil
        }
    }

    /// `starts_with` / `ends_with`: `[text, affix]`, both strings, else `null`.
    static func affix(_ arguments: [FlagValue], prefix: Bool) -> FlagValue {
        guard arguments.count == 2, case .string(let text) = arguments[0], case .string(let affix) = arguments[1] else { return .null }
        // Byte for byte (as flagd compares), not by grapheme clusters.
        return .bool(prefix ? text.utf8.starts(with: affix.utf8) : text.utf8.suffix(affix.utf8.count).elementsEqual(affix.utf8))
    }
}
