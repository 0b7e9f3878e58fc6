import Foundation

/// How JsonLogic values behave as Booleans, numbers and strings. Where JsonLogic
/// implementations disagree, these follow flagd's evaluator (Go): an empty object is false.
enum LogicCoercion {
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

    /// The number a value stands for in arithmetic and ordering (JavaScript's `Number()`):
    /// `null` is 0, Booleans 0 or 1, strings their numeric text (blank is 0, other text NaN),
    /// a one-element list its element, anything else NaN.
    static func number(_ value: FlagValue) -> Double {
        switch value {
        case .int(let i): return Double(i)
        case .double(let d): return d
        case .bool(let b): return b ? 1 : 0
        case .null: return 0
        case .string(let s): return number(parsing: s)
        case .list(let l):
            if l.isEmpty { return 0 }
            return l.count == 1 ? number(l[0]) : .nan
        case .object: return .nan
        }
    }

    /// Numeric text (decimal, with optional sign, fraction and exponent), trimmed; blank is 0.
    static func number(parsing text: String) -> Double {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.isEmpty { return 0 }
        guard trimmed.utf8.allSatisfy({ b in
            (b >= 0x30 && b <= 0x39) || b == UInt8(ascii: ".") || b == UInt8(ascii: "-") || b == UInt8(ascii: "+")
                || b == UInt8(ascii: "e") || b == UInt8(ascii: "E")
        }) else { return .nan }
        return Double(trimmed) ?? .nan
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

    /// Loose equality (`==`): numbers by value; a number or Boolean against a string or
    /// Boolean by number; `null` equals only `null`; lists and objects by content.
    static func looselyEqual(_ a: FlagValue, _ b: FlagValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.null, _), (_, .null): return false
        case (.string(let x), .string(let y)): return x == y
        case (.list, .list), (.object, .object): return a == b || strictlyEqual(a, b)
        case (.list, _), (.object, _), (_, .list), (_, .object): return false
        default:
            let x = number(a), y = number(b)
            return !x.isNaN && x == y
        }
    }

    /// Strict equality (`===`): the same JSON type and value (`1` and `1.0` are one number).
    static func strictlyEqual(_ a: FlagValue, _ b: FlagValue) -> Bool {
        switch (a, b) {
        case (.int(let x), .int(let y)): return x == y
        case (.int, .double), (.double, .int), (.double, .double): return number(a) == number(b)
        case (.list(let x), .list(let y)): return x.count == y.count && zip(x, y).allSatisfy { strictlyEqual($0, $1) }
        case (.object(let x), .object(let y)):
            return x.count == y.count && x.allSatisfy { key, value in y[key].map { strictlyEqual(value, $0) } ?? false }
        default: return a == b
        }
    }

    /// Ordering for `<`, `<=`, `>`, `>=`: two strings compare as text, anything else as
    /// numbers; nil when a number is NaN (every comparison is then false).
    static func order(_ a: FlagValue, _ b: FlagValue) -> Int? {
        if case .string(let x) = a, case .string(let y) = b {
            return x == y ? 0 : (x.utf16.lexicographicallyPrecedes(y.utf16) ? -1 : 1)
        }
        let x = number(a), y = number(b)
        if x.isNaN || y.isNaN { return nil }
        return x == y ? 0 : (x < y ? -1 : 1)
    }
}
