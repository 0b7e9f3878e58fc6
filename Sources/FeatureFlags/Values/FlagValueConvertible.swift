/// A Swift type that maps to and from ``FlagValue`` directly, without Codable.
///
/// Bool, Int, Double, String, ``FlagValue`` and arrays / string-keyed dictionaries of
/// these conform. Conversions are strict: an `Int` flag does not accept `2.5` or `"2"`;
/// a `Double` flag accepts a JSON integer.
public protocol FlagValueConvertible: Codable, Sendable {
    /// The Swift value for `flagValue`, or nil when its type does not fit.
    init?(flagValue: FlagValue)
    /// The flag value for this Swift value.
    var flagValue: FlagValue { get }
}

extension Bool: FlagValueConvertible {
    /// `.bool` only.
    @inlinable public init?(flagValue: FlagValue) {
        guard case .bool(let b) = flagValue else { return nil }
        self = b
    }
    /// `.bool(self)`.
    public var flagValue: FlagValue { .bool(self) }
}

extension Int: FlagValueConvertible {
    /// `.int` only.
    @inlinable public init?(flagValue: FlagValue) {
        guard case .int(let i) = flagValue else { return nil }
        self = i
    }
    /// `.int(self)`.
    public var flagValue: FlagValue { .int(self) }
}

extension Double: FlagValueConvertible {
    /// `.double`, or `.int` widened.
    @inlinable public init?(flagValue: FlagValue) {
        switch flagValue {
        case .double(let d): self = d
        case .int(let i): self = Double(i)
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
    /// `.list` whose every element converts; nil if any does not.
    public init?(flagValue: FlagValue) {
        guard case .list(let items) = flagValue else { return nil }
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
    /// `.object` whose every member converts; nil if any does not.
    public init?(flagValue: FlagValue) {
        guard case .object(let members) = flagValue else { return nil }
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
