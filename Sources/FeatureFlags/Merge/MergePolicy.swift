/// How one flag's values from several contexts (highest tier first) become one; JSON text is read as what it holds.
public enum MergePolicy: Sendable {
    /// The highest tier's value wins (theme colour, display name: Business over Personal).
    case topTier
    /// Lists are joined, highest tier first, without duplicates. Non-lists fall back to ``topTier``.
    case union
    /// The largest number wins (data limit). Non-numbers fall back to ``topTier``.
    case maximum
    /// The smallest number wins. Non-numbers fall back to ``topTier``.
    case minimum
    /// `true` if any context says `true` (priority support). Non-Booleans are ignored.
    case any
    /// `true` only if every context says `true`. Non-Booleans are ignored.
    case all
    /// The app decides from every candidate (highest tier first); nil falls back to ``topTier``.
    case custom(@Sendable ([(context: EvaluationContext, value: FlagValue)]) -> FlagValue?)

    /// The merged value of `candidates` (non-empty, highest tier first).
    public func merge(_ candidates: [(context: EvaluationContext, value: FlagValue)]) -> FlagValue {
        let top = candidates[0].value
        switch self {
        case .topTier:
            return top
        case .union:
            var seen = Set<FlagValue>()
            var members: [FlagValue] = []
            for candidate in candidates {
                guard case .list(let items) = candidate.value.unwrappingText else { continue }
                for item in items where seen.insert(item).inserted { members.append(item) }
            }
            return candidates.contains { if case .list = $0.value.unwrappingText { true } else { false } } ? .list(members) : top
        case .maximum, .minimum:
            let numbers = candidates.compactMap { candidate -> (FlagValue, Double)? in
                let value = candidate.value.readingText
                guard value.boolValue == nil, let number = value.doubleValue else { return nil }
                return (value, number)
            }
            let pick = if case .maximum = self { numbers.max { $0.1 < $1.1 } } else { numbers.min { $0.1 < $1.1 } }
            return pick?.0 ?? top
        case .any, .all:
            let flags = candidates.compactMap { $0.value.readingText.boolValue }
            guard !flags.isEmpty else { return top }
            if case .any = self { return .bool(flags.contains(true)) }
            return .bool(!flags.contains(false))
        case .custom(let decide):
            return decide(candidates) ?? top
        }
    }
}

extension FlagValue {
    /// For text holding JSON (a number, Boolean, list or object), what it holds; else `self`.
    var readingText: FlagValue {
        guard case .string(let text) = self, let parsed = FlagValue.parsedText(text) else { return self }
        return parsed
    }
}
