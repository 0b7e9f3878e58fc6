/// A type converting to and from ``FlagValue`` strictly, except that a string holding the wanted type's JSON (`"150"`) converts.
public protocol FlagValueConvertible: Codable, Sendable {
    /// The Swift value for `flagValue`, or nil when its type does not fit.
    init?(flagValue: FlagValue)
    /// The flag value for this Swift value.
    var flagValue: FlagValue { get }
}

extension Bool: FlagValueConvertible {
    /// `.bool`, or the text `"true"` / `"false"`.
    @inlinable public init?(flagValue: FlagValue) {
        switch flagValue {
        case .bool(let b): self = b
        case .string("true"): self = true
        case .string("false"): self = false
        default: return nil
        }
    }
    /// `.bool(self)`.
    public var flagValue: FlagValue { .bool(self) }
}

extension Int: FlagValueConvertible {
    /// `.int`, or text that is a JSON integer.
    @inlinable public init?(flagValue: FlagValue) {
        switch flagValue {
        case .int(let i): self = i
        case .string(let text):
            guard case .int(let i)? = FlagValue.parsedText(text) else { return nil }
            self = i
        default: return nil
        }
    }
    /// `.int(self)`.
    public var flagValue: FlagValue { .int(self) }
}

extension Double: FlagValueConvertible {
    /// `.double`, `.int` widened, or text that is a JSON number.
    @inlinable public init?(flagValue: FlagValue) {
        switch flagValue {
        case .double(let d): self = d
        case .int(let i): self = Double(i)
        case .string(let text):
            switch FlagValue.parsedText(text) {
            case .double(let d)?: self = d
            case .int(let i)?: self = Double(i)
            default: return nil
            }
        default: return nil
        }
    }
    /// `.double(self)`.
    public var flagValue: FlagValue { .double(self) }
}

extension String: FlagValueConvertible {
    /// `.string` only.
    @inlinable public init?(flagValue: FlagValue) {
        guard case .string(let s) = flagValue else { return nil }
        self = s
    }
    /// `.string(self)`.
    public var flagValue: FlagValue { .string(self) }
}

extension FlagValue: FlagValueConvertible {
    /// Any value.
    public init?(flagValue: FlagValue) { self = flagValue }
    /// `self`.
    public var flagValue: FlagValue { self }
}

extension Array: FlagValueConvertible where Element: FlagValueConvertible {
    /// `.list` (or JSON text of one) whose every element converts; nil if any does not.
    public init?(flagValue: FlagValue) {
        guard case .list(let items) = flagValue.unwrappingText else { return nil }
        var out: [Element] = []
        out.reserveCapacity(items.count)
        for item in items {
            guard let e = Element(flagValue: item) else { return nil }
            out.append(e)
        }
        self = out
    }
    /// `.list` of the elements.
    public var flagValue: FlagValue { .list(map(\.flagValue)) }
}

extension Dictionary: FlagValueConvertible where Key == String, Value: FlagValueConvertible {
    /// `.object` (or JSON text of one) whose every member converts; nil if any does not.
    public init?(flagValue: FlagValue) {
        guard case .object(let members) = flagValue.unwrappingText else { return nil }
        var out: [String: Value] = [:]
        out.reserveCapacity(members.count)
        for (k, v) in members {
            guard let e = Value(flagValue: v) else { return nil }
            out[k] = e
        }
        self = out
    }
    /// `.object` of the members.
    public var flagValue: FlagValue { .object(mapValues(\.flagValue)) }
}

extension FlagValue {
    /// The value `text` holds as JSON, or nil when it is not JSON (a plain string).
    @usableFromInline
    static func parsedText(_ text: String) -> FlagValue? {
        guard let first = text.utf8.first, first != UInt8(ascii: "\"") else { return nil }
        return try? FlagJSON.parse(Array(text.utf8))
    }

    /// For a string holding a JSON list or object, that list or object; otherwise `self`.
    @usableFromInline
    package var unwrappingText: FlagValue {
        guard case .string(let text) = self, let first = text.utf8.first,
            first == UInt8(ascii: "[") || first == UInt8(ascii: "{"), let parsed = FlagValue.parsedText(text)
        else { return self }
        return parsed
    }
}
