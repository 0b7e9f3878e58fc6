/// How flagd's `fractional` maps a bucketing value's hash to a bucket.
public enum FractionalBucketing: String, Sendable, CaseIterable {
    /// flagd's current bucketing: `(hash × totalWeight) >> 32` on the unsigned 32-bit
    /// MurmurHash3, in integers — any weight ≥ 1 gets its share, down to 1 in 2³¹−1.
    case highPrecision = "high-precision"
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
    /// - The first argument, when it is not a bucket (a list), is the bucketing value: a string
    ///   is hashed as it is; anything else (a number, `null` from a missing `var`) is dropped and
    ///   the default, `$flagd.flagKey` followed by `targetingKey`, is used.
    /// - A bucket is `[variant]` or `[variant, weight]`: the variant a string, Boolean, number
    ///   or `null`; the weight a whole number (default 1, negative counts as 0); weights are
    ///   relative and their sum at most `Int32.max`.
    /// - Without a bucketing value (no string given, no `targetingKey`) the answer is `null` —
    ///   unless every bit of weight is in one bucket, which is then the answer for any value.
    static func fractional(_ arguments: [FlagValue], scope: LogicScope) -> FlagValue {
        guard !arguments.isEmpty else { return .null }
        var buckets = arguments[...]
        var bucketBy: String?
        switch arguments[0] {
        case .list: break
        case .string(let text):
            bucketBy = text
            buckets = buckets.dropFirst()
        default:
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
        if bucketBy == nil, case .string(let key)? = scope.context["targetingKey"] {
            bucketBy = scope.flagKey + key
        }
        guard let bucketBy else {
            let weighted = variants.filter { $0.weight > 0 }
            return weighted.count == 1 ? weighted[0].variant : .null
        }
        let hash = MurmurHash3.x86_32(bucketBy)
        switch scope.bucketing {
        case .highPrecision:
            let bucket = (UInt64(hash) * total) >> 32
            var end: UInt64 = 0
            for (variant, weight) in variants {
                end += weight
                if bucket < end { return variant }
            }
        case .legacyPercent:
            let signed = Int32(bitPattern: hash)
            let bucket = abs(Double(signed)) / Double(Int32.max) * 100
            var end = 0.0
            for (variant, weight) in variants {
                end += 100 * Double(weight) / Double(total)
                if bucket < end { return variant }
            }
        }
        return .null
    }

    /// `sem_ver`: `[version, operator, version]` → whether the first version stands in that
    /// relation to the second; `null` when an argument is missing, not a version or not an
    /// operator.
    static func semanticVersion(_ arguments: [FlagValue]) -> FlagValue {
        guard arguments.count == 3, case .string(let left) = arguments[0], case .string(let op) = arguments[1],
            case .string(let right) = arguments[2], let a = SemanticVersion(left), let b = SemanticVersion(right),
            let result = a.matches(op, b)
        else { return .null }
        return .bool(result)
    }

    /// `starts_with` / `ends_with`: `[text, affix]`, both strings, else `null`.
    static func affix(_ arguments: [FlagValue], prefix: Bool) -> FlagValue {
        guard arguments.count == 2, case .string(let text) = arguments[0], case .string(let affix) = arguments[1] else { return .null }
        // Byte for byte (as flagd compares), not by grapheme clusters.
        return .bool(prefix ? text.utf8.starts(with: affix.utf8) : text.utf8.suffix(affix.utf8.count).elementsEqual(affix.utf8))
    }
}
