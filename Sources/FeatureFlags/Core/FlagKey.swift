import Foundation

/// The conversions of a ``FlagKey`` beyond its read path, shared by its copies.
@usableFromInline
final class FlagKeyConversions<Value: Sendable>: Sendable {
    @usableFromInline let convert: @Sendable (FlagValue) -> Value?
    @usableFromInline let encode: @Sendable (Value) -> FlagValue?
    /// For keys whose values may hold members this build does not know (lists of enums):
    /// those members' raw values, so that a read can report them. Nil for other keys.
    @usableFromInline let unknownMembers: (@Sendable (FlagValue) -> [String])?

    @usableFromInline
    init(
        convert: @escaping @Sendable (FlagValue) -> Value?, encode: @escaping @Sendable (Value) -> FlagValue?,
        unknownMembers: (@Sendable (FlagValue) -> [String])?
    ) {
        self.convert = convert
        self.encode = encode
        self.unknownMembers = unknownMembers
    }
}

/// A typed flag key with its code default, declared once and read everywhere:
///
/// ```swift
/// extension FlagKey where Value == Bool {
///     static let newCheckout = FlagKey("new_checkout", default: false)
/// }
/// let on = flags.value(.newCheckout)
/// ```
///
/// The default is what a read returns when the flag is missing or has the wrong type, and
/// it is the **safe value** every read returns while the kill switch is on.
public struct FlagKey<Value: Sendable>: Sendable, CustomStringConvertible {
    // Fixed-size fields first and `defaultValue` last: then a generic read can find `name`
    // and `resolve` at constant offsets without instantiating `FlagKey<Value>`'s metadata.

    /// The flag's name on the wire and on disk.
    public let name: String
    /// `convert` or the default in one call, built where the key is created so that the
    /// conversion is specialised for `Value` even when the read itself is not (reads through
    /// `any FeatureFlagClient` are generic at run time).
    @usableFromInline let resolve: @Sendable (FlagValue?) -> Value
    /// The conversions the read path does not need, behind one reference: a key is copied
    /// on every read, and each reference-counted field costs a retain and a release.
    @usableFromInline let conversions: FlagKeyConversions<Value>
    /// Whether reads must look for unknown list members (``FlagKeyConversions/unknownMembers``
    /// is set): one byte the read path tests without touching ``conversions``.
    @usableFromInline let auditsMembers: Bool
    /// The code default, also the safe value under the kill switch.
    public let defaultValue: Value

    /// A key with custom conversions, for types none of the other initialisers fit.
    /// - Parameters:
    ///   - convert: the Swift value for a flag value, or nil when it does not fit (TYPE_MISMATCH).
    ///   - encode: the flag value for a Swift value, used by overrides and test clients.
    @inlinable
    public init(
        _ name: String,
        default defaultValue: Value,
        convert: @escaping @Sendable (FlagValue) -> Value?,
        encode: @escaping @Sendable (Value) -> FlagValue?
    ) {
        self.init(
            name, default: defaultValue, convert: convert, encode: encode,
            resolve: { found in
                if let found, let typed = convert(found) { return typed }
                return defaultValue
            })
    }

    /// The memberwise form, for initialisers that can give `resolve` a body of its own
    /// (one call on the read path instead of a closure calling a closure).
    @inlinable
    init(
        _ name: String, default defaultValue: Value, convert: @escaping @Sendable (FlagValue) -> Value?,
        encode: @escaping @Sendable (Value) -> FlagValue?, resolve: @escaping @Sendable (FlagValue?) -> Value,
        unknownMembers: (@Sendable (FlagValue) -> [String])? = nil
    ) {
        self.name = name
        self.resolve = resolve
        self.conversions = FlagKeyConversions(convert: convert, encode: encode, unknownMembers: unknownMembers)
        self.auditsMembers = unknownMembers != nil
        self.defaultValue = defaultValue
    }

    /// The Swift value for `flagValue`, or nil when its type does not fit.
    @inlinable public func value(from flagValue: FlagValue) -> Value? { conversions.convert(flagValue) }

    /// The flag value for `value`, or nil when the type cannot be encoded.
    public func flagValue(for value: Value) -> FlagValue? { conversions.encode(value) }

    /// The Swift value for a flag value, or nil when its type does not fit.
    @inlinable var convert: @Sendable (FlagValue) -> Value? { conversions.convert }
    /// For keys that report unknown list members: those members' raw values.
    @inlinable var unknownMembers: (@Sendable (FlagValue) -> [String])? { conversions.unknownMembers }

    /// `name`.
    public var description: String { name }
}

extension FlagKey where Value: FlagValueConvertible {
    /// A key for `Bool`, `Int`, `Double`, `String`, ``FlagValue`` and lists or objects of them.
    @inlinable
    public init(_ name: String, default defaultValue: Value) {
        self.init(
            name, default: defaultValue, convert: { Value(flagValue: $0) }, encode: { $0.flagValue },
            resolve: { found in
                guard let found, let typed = Value(flagValue: found) else { return defaultValue }
                return typed
            })
    }
}

extension FlagKey where Value: RawRepresentable, Value.RawValue: FlagValueConvertible {
    /// A key for an enum (or any `RawRepresentable`) carried as its raw value; an unknown
    /// raw value is a TYPE_MISMATCH and reads as the default.
    @inlinable
    public init(_ name: String, default defaultValue: Value) {
        self.init(rawValueKey: name, default: defaultValue)
    }

    /// The raw-value conversions shared by both `RawRepresentable` initialisers.
    @inlinable
    init(rawValueKey name: String, default defaultValue: Value) {
        self.init(
            name, default: defaultValue,
            convert: { Value.RawValue(flagValue: $0).flatMap(Value.init(rawValue:)) },
            encode: { $0.rawValue.flagValue })
    }
}

extension FlagKey where Value: RawRepresentable & Decodable, Value.RawValue: FlagValueConvertible {
    /// A key for a `Codable` enum with raw values: read by raw value, like any `RawRepresentable`.
    /// (This overload only settles which of the two others applies.)
    @inlinable
    public init(_ name: String, default defaultValue: Value) {
        self.init(rawValueKey: name, default: defaultValue)
    }
}

extension FlagKey where Value: Decodable {
    /// A key for a `Decodable` struct or collection, decoded with ``FlagValueDecoder``.
    /// A value that does not decode is a TYPE_MISMATCH and reads as the default.
    public init(_ name: String, default defaultValue: Value) {
        self.init(
            name, default: defaultValue,
            convert: { value in
                if let decoded = try? FlagValueDecoder().decode(Value.self, from: value) { return decoded }
                // Text holding JSON (a service that sends every value as a string).
                let unwrapped = value.unwrappingText
                return unwrapped == value ? nil : try? FlagValueDecoder().decode(Value.self, from: unwrapped)
            },
            encode: { value in
                guard let encodable = value as? any Encodable,
                    let data = try? JSONEncoder().encode(encodable)
                else { return nil }
                return try? FlagJSON.parse(data)
            })
    }
}
