/// A JSON flag value; ``FlagJSON`` parses `1` as `.int(1)` and `1.0` as `.double(1.0)`, keeping the number's form.
public enum FlagValue: Sendable, Hashable {
    /// JSON `true` / `false`.
    case bool(Bool)
    /// A JSON number written without fraction or exponent that fits in `Int`.
    case int(Int)
    /// Any other JSON number.
    case double(Double)
    /// A JSON string.
    case string(String)
    /// A JSON array.
    case list([FlagValue])
    /// A JSON object.
    case object([String: FlagValue])
    /// JSON `null`.
    case null
}

extension FlagValue {
    /// Hashes the case and its payload (out of line: avoids inlined copies of the recursive hash).
    @inline(never)
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .bool(let value): hasher.combine(0); hasher.combine(value)
        case .int(let value): hasher.combine(1); hasher.combine(value)
        case .double(let value): hasher.combine(2); hasher.combine(value)
        case .string(let value): hasher.combine(3); hasher.combine(value)
        case .list(let value): hasher.combine(4); hasher.combine(value)
        case .object(let value): hasher.combine(5); hasher.combine(value)
        case .null: hasher.combine(6)
        }
    }
}

extension FlagValue {
    /// The Boolean, if this is `.bool`.
    public var boolValue: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    /// The integer, if this is `.int`.
    public var intValue: Int? { if case .int(let i) = self { return i } else { return nil } }
    /// The number as a `Double`, if this is `.double` or `.int`.
    public var doubleValue: Double? {
        switch self {
        case .double(let d): return d
        case .int(let i): return Double(i)
        default: return nil
        }
    }
    /// The string, if this is `.string`.
    public var stringValue: String? { if case .string(let s) = self { return s } else { return nil } }
    /// The elements, if this is `.list`.
    public var listValue: [FlagValue]? { if case .list(let l) = self { return l } else { return nil } }
    /// The members, if this is `.object`.
    public var objectValue: [String: FlagValue]? { if case .object(let o) = self { return o } else { return nil } }
    /// Whether this is `.null`.
    public var isNull: Bool { self == .null }

    /// The JSON type name of this value, for messages ("bool", "int", "double", "string", "list", "object", "null").
    public var typeName: String {
        switch self {
        case .bool: return "bool"
        case .int: return "int"
        case .double: return "double"
        case .string: return "string"
        case .list: return "list"
        case .object: return "object"
        case .null: return "null"
        }
    }

    /// ``typeName`` with its article, for messages: "an int", "a list".
    package var typeNameWithArticle: String {
        if case .int = self { return "an int" }
        if case .object = self { return "an object" }
        return "a " + typeName
    }
}

// Deliberately not ExpressibleByNilLiteral: `nil` must stay unambiguous for `FlagValue?`.
extension FlagValue: ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// `true` / `false` as `.bool`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An integer literal as `.int`.
    public init(integerLiteral value: Int) { self = .int(value) }
    /// A float literal as `.double`.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// A string literal as `.string`.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An array literal as `.list`.
    public init(arrayLiteral elements: FlagValue...) { self = .list(elements) }
    /// A dictionary literal as `.object`; a repeated key keeps the last value.
    public init(dictionaryLiteral elements: (String, FlagValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension FlagValue: Codable {
    /// Decodes any JSON value; via `JSONDecoder`, `2.0` becomes `.int(2)` (``FlagJSON/parse(_:limits:)`` keeps the form).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() { self = .null; return }
        if let b = try? c.decode(Bool.self) { self = .bool(b); return }
        if let i = try? c.decode(Int.self) { self = .int(i); return }
        if let d = try? c.decode(Double.self) { self = .double(d); return }
        if let s = try? c.decode(String.self) { self = .string(s); return }
        if let l = try? c.decode([FlagValue].self) { self = .list(l); return }
        if let o = try? c.decode([String: FlagValue].self) { self = .object(o); return }
        throw DecodingError.dataCorruptedError(in: c, debugDescription: "not a JSON value")
    }

    /// Encodes as the matching JSON value.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.singleValueContainer()
        switch self {
        case .bool(let b): try c.encode(b)
        case .int(let i): try c.encode(i)
        case .double(let d): try c.encode(d)
        case .string(let s): try c.encode(s)
        case .list(let l): try c.encode(l)
        case .object(let o): try c.encode(o)
        case .null: try c.encodeNil()
        }
    }
}

extension FlagValue: CustomStringConvertible {
    /// Compact JSON text of the value.
    public var description: String { FlagJSON.string(self) }
}
