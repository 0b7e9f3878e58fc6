import Foundation
import FeatureFlags

/// How JsonLogic values behave as Booleans, numbers and strings. Where JsonLogic
/// implementations disagree, these follow flagd's evaluator (Go): an empty object is false.
enum LogicCoercion {
    /// Text equality as every flagd evaluator has it: the same UTF-8 bytes (Go, Java,
    /// JavaScript and Python compare code units or code points). Swift's `==` on strings is
    /// canonical equivalence — `"é"` (U+00E9) equals `"e\u{301}"` there — which would match
    /// rules another evaluator of the same file does not.
    static func sameText(_ x: String, _ y: String) -> Bool { x.utf8.elementsEqual(y.utf8) }

    /// `members[key]`, only when the member's name has `key`'s bytes: a Swift dictionary also
    /// finds a canonically equivalent name (``sameText(_:_:)``).
    static func member<Value>(_ key: String, of members: [String: Value]) -> Value? {
        guard let index = members.index(forKey: key), sameText(members[index].key, key) else { return nil }
        return members[index].value
    }

    /// Whether two values are the same JSON, text and member names compared by their bytes
    /// (``sameText(_:_:)``); numbers and Booleans as `FlagValue`'s `==` compares them.
    static func identical(_ a: FlagValue?, _ b: FlagValue?) -> Bool {
        guard let a, let b else { return a == nil && b == nil }
        switch (a, b) {
        case (.string(let x), .string(let y)):
            return sameText(x, y)
        case (.list(let x), .list(let y)):
            guard x.count == y.count else { return false }
            for index in x.indices where !identical(x[index], y[index]) { return false }
            return true
        case (.object(let x), .object(let y)):
            guard x.count == y.count else { return false }
            for (name, value) in x where !identical(value, member(name, of: y)) { return false }
            return true
        default:
            return a == b
        }
    }

    /// Truthiness: `false`, `0`, `NaN`, `""`, `[]`, `{}` and `null` are false; everything else true.
    static func truthy(_ value: FlagValue) -> Bool {
        switch value {
        case .bool(let b): return b
        case .int(let i): return i != 0
        case .double(let d): return d != 0 && !d.isNaN
        case .string(let s): return !s.isEmpty
        case .list(let l): return !l.isEmpty
        case .object(let o): return !o.isEmpty
        case .null: return false
        }
    }

    /// A number as a value: an integer when it is one (and fits exactly), else a double;
    /// NaN and infinities are `null` (JSON has no such numbers).
    static func value(of number: Double) -> FlagValue {
        guard number.isFinite else { return .null }
        if number == number.rounded(), abs(number) < 9_007_199_254_740_992 { return .int(Int(number)) }
        return .double(number)
    }

    /// The text a value stands for in `cat`, `in` and `substr` (JavaScript's string
    /// conversion as `join` applies it: `null` is empty).
    static func text(_ value: FlagValue) -> String {
        switch value {
        case .string(let s): return s
        case .int(let i): return String(i)
        case .double(let d): return text(of: d)
        case .bool(let b): return b ? "true" : "false"
        case .null: return ""
        case .list(let l): return l.map(text).joined(separator: ",")
        case .object: return "[object Object]"
        }
    }

    /// A double as JavaScript prints it for the common cases: integral values without `.0`.
    static func text(of number: Double) -> String {
        if number.isNaN { return "NaN" }
        if number.isInfinite { return number < 0 ? "-Infinity" : "Infinity" }
        if number == number.rounded(), abs(number) < 1e21 {
            return String(format: "%.0f", number)
        }
        return "\(number)"
    }

    // MARK: Comparison, membership and concatenation, as flagd's Go evaluator does them
    //
    // flagd evaluates with github.com/diegoholiveira/jsonlogic (v3), where every JSON number is
    // a float64 and some type mismatches panic — which flagd turns into a failed evaluation
    // (`PARSE_ERROR`). The functions below follow it; a nil result means "flagd's evaluator
    // fails here".

    /// The number a value stands for in `==`, `<`, `<=`, `>`, `>=` (the evaluator's
    /// JavaScript-like conversion): numbers as they are, Booleans 0 or 1, `null` 0, blank
    /// text 0, other text parsed as a Go float (no surrounding blanks allowed) or NaN; lists and
    /// objects NaN.
    static func comparisonNumber(_ value: FlagValue) -> Double {
        switch value {
        case .int(let i): return Double(i)
        case .double(let d): return d
        case .bool(let b): return b ? 1 : 0
        case .null: return 0
        case .string(let s):
            if trimmingSpace(s).isEmpty { return 0 }
            return goFloat(s) ?? .nan
        case .list, .object: return .nan
        }
    }

    /// The number flagd's evaluator library converts a value to (`typing.ToNumber`) — in
    /// arithmetic, `abs`, `substr`'s bounds, `missing_some`'s count and `in`'s numeric
    /// comparisons: numbers as they are, text parsed as a Go float (0 when it is not one); nil
    /// for a Boolean, `null`, a list or an object, where the library fails.
    static func libraryNumber(_ value: FlagValue) -> Double? {
        switch value {
        case .int(let i): return Double(i)
        case .double(let d): return d
        case .string(let s): return goFloat(s) ?? 0
        case .bool, .null, .list, .object: return nil
        }
    }

    /// Go's `strconv.ParseFloat` of `text`: decimal or hexadecimal, `Inf`, `NaN`; out-of-range
    /// values as infinities; nil when it is no number (blanks around it included) — which is
    /// what `Double(_:)` accepts too.
    static func goFloat(_ text: String) -> Double? { Double(text) }

    /// Loose equality (`==`): `null` equals only `null`; two strings by their bytes; anything
    /// else as ``comparisonNumber(_:)`` — so `1 == 1.0`, `1 == "1"`, `true == 1`; lists and
    /// objects are never equal (NaN), not even to themselves.
    static func looselyEqual(_ a: FlagValue, _ b: FlagValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.null, _), (_, .null): return false
        case (.string(let x), .string(let y)): return sameText(x, y)
        default: return comparisonNumber(a) == comparisonNumber(b)
        }
    }

    /// Strict equality (`===`): `null` equals only `null`; otherwise the same JSON type (every
    /// number is one type: `1 === 1.0`) and then loosely equal — so lists and objects are
    /// never strictly equal either.
    static func strictlyEqual(_ a: FlagValue, _ b: FlagValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.int, .int), (.int, .double), (.double, .int), (.double, .double), (.string, .string), (.bool, .bool):
            return looselyEqual(a, b)
        default: return false
        }
    }

    /// `a < b`: two strings compare by their UTF-8 bytes (code point order), anything else as
    /// ``comparisonNumber(_:)`` (NaN: false).
    static func less(_ a: FlagValue, _ b: FlagValue) -> Bool {
        if case .string(let x) = a, case .string(let y) = b { return x.utf8.lexicographicallyPrecedes(y.utf8) }
        return comparisonNumber(a) < comparisonNumber(b)
    }

    /// `a <= b`: ``less(_:_:)`` or ``looselyEqual(_:_:)`` — so `null <= 0` is false (they are
    /// neither less nor equal), unlike JavaScript.
    static func lessOrEqual(_ a: FlagValue, _ b: FlagValue) -> Bool { less(a, b) || looselyEqual(a, b) }

    /// Whether `needle` is `in` `haystack`: in text, as a substring (a needle that is not text
    /// fails: nil); in a list, an element that is itself a list `[low, high]` matches a number
    /// between them (inclusive), a numeric needle matches an element whose
    /// ``libraryNumber(_:)`` equals it (`1` is in `["1"]`), any other needle an identical
    /// element (text, Boolean, `null`). Where flagd's evaluator fails on an element before
    /// finding a match — a range against a non-numeric needle, a number against a Boolean or
    /// `null`, an object against an object — nil. Anything else as a haystack: false.
    static func contains(_ needle: FlagValue, in haystack: FlagValue) -> Bool? {
        switch haystack {
        case .string(let text):
            guard case .string(let part) = needle else { return nil }
            // Byte for byte, as flagd's evaluator searches (`"é"` is not in `"cafe\u{301}"`).
            return part.isEmpty || text.utf8.firstRange(of: part.utf8) != nil
        case .list(let elements):
            let number = needle.isNumber ? libraryNumber(needle) : nil
            for element in elements {
                if case .list(let range) = element {
                    guard range.count >= 2, let value = libraryNumber(needle), let low = libraryNumber(range[0]),
                        let high = libraryNumber(range[1])
                    else { return nil }
                    if value >= low, high >= value { return true }
                    continue
                }
                if let number {
                    guard let candidate = libraryNumber(element) else { return nil }
                    if candidate == number { return true }
                    continue
                }
                switch (needle, element) {
                case (.string(let x), .string(let y)) where sameText(x, y): return true
                case (.bool(let x), .bool(let y)) where x == y: return true
                case (.null, .null): return true
                case (.object, .object): return nil
                default: continue
                }
            }
            return false
        default:
            return false
        }
    }

    /// Whether `list` holds `element` as `contains_all`, `contains_any` and `contains_none` look:
    /// numbers by value, text, Booleans and `null` by identity; nil where flagd's evaluator
    /// fails (a list or object against one of its kind, before a match).
    static func listHolds(_ list: [FlagValue], _ element: FlagValue) -> Bool? {
        for item in list {
            switch (item, element) {
            case (.list, .list), (.object, .object): return nil
            case (.string(let x), .string(let y)) where sameText(x, y): return true
            case (.bool(let x), .bool(let y)) where x == y: return true
            case (.null, .null): return true
            default:
                if item.isNumber, element.isNumber, comparisonNumber(item) == comparisonNumber(element) { return true }
            }
        }
        return false
    }

    /// One value's text in `cat`: text as it is, integers in decimal, other numbers in their
    /// shortest round-trip digits without an exponent (Go's `FormatFloat(x, 'f', -1, 64)`:
    /// `1e21` is `1000000000000000000000`), `null` empty; nil for a Boolean, a list or an
    /// object (flagd's evaluator fails on them).
    static func concatenationText(_ value: FlagValue) -> String? {
        switch value {
        case .string(let s): return s
        case .int(let i): return String(i)
        case .double(let d): return GoNumberText.fixed(d)
        case .null: return ""
        case .bool, .list, .object: return nil
        }
    }
}

extension LogicCoercion {
    /// `text` without leading and trailing white space in Unicode's sense (Go's
    /// `strings.TrimSpace`: tab, line breaks, space, NEL, no-break space and the other
    /// `White_Space` characters).
    static func trimmingSpace(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let start = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[start...last])
    }
}

extension FlagValue {
    /// Whether this is a number (integer or not).
    fileprivate var isNumber: Bool {
        switch self {
        case .int, .double: return true
        default: return false
        }
    }
}
