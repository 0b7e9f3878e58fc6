import Foundation

/// The conversions of a ``FlagKey``: to and from ``FlagValue``, and unknown enum list members.
@usableFromInline
final class FlagKeyConversions<Value: Sendable>: Sendable {
    @usableFromInline let convert: @Sendable (FlagValue) -> Value?
    @usableFromInline let encode: @Sendable (Value) -> FlagValue?
    /// Raw values of list members this build does not know (enum lists); nil for other keys.
    @usableFromInline let unknownMembers: (@Sendable (FlagValue) -> [String])?

    @usableFromInline
    init(
        convert: @escaping @Sendable (FlagValue) -> Value?, encode: @escaping @Sendable (Value) -> FlagValue?,
        unknownMembers: (@Sendable (FlagValue) -> [String])? = nil
    ) {
        self.convert = convert
        self.encode = encode
        self.unknownMembers = unknownMembers
    }
}

/// How a ``FlagKey`` holds its conversions: unretained, so copying a key costs no refcounting.
/// Safe because no conversions object is ever released.
@usableFromInline
struct FlagKeyConversionsReference<Value: Sendable>: Sendable {
    /// A `FlagKeyConversions` (Sendable, immutable) that is never released.
    @usableFromInline let object: Unmanaged<FlagKeyConversions<Value>>

    /// A reference to `object`, which is retained here once and never released.
    @usableFromInline
    init(keeping object: FlagKeyConversions<Value>) {
        self.object = Unmanaged.passRetained(object)
    }

    /// A reference to `object`, which something else keeps for the life of the process.
    @usableFromInline
    init(kept object: FlagKeyConversions<Value>) { self.object = Unmanaged.passUnretained(object) }

    /// Runs `body` with the conversions, unretained (safe: they are never released).
    @inlinable @inline(__always)
    func with<R>(_ body: (FlagKeyConversions<Value>) -> R) -> R { object._withUnsafeGuaranteedRef(body) }
}

/// Which package initialiser built a shared conversions object.
@usableFromInline
enum SharedConversionsKind: UInt8, Sendable {
    case convertible, rawValue, decodable, forwardCompatibleList, optionalConvertible
}

/// Conversions shared per value type and initialiser, created on first use, never released.
@usableFromInline
enum SharedKeyConversions {
    /// One shared object: the value type and initialiser it is for.
    private struct Shared {
        let type: ObjectIdentifier
        let kind: SharedConversionsKind
        let object: Unmanaged<AnyObject>
    }

    /// A linearly searched list: a handful of entries, cheaper at launch than a dictionary.
    private static let table = Locked<[Shared]>([])

    /// The shared conversions for `Value` built by `kind`; `make` builds them the first time.
    @usableFromInline
    static func conversions<Value: Sendable>(
        _ kind: SharedConversionsKind, for _: Value.Type, make: () -> FlagKeyConversions<Value>
    ) -> FlagKeyConversionsReference<Value> {
        let type = ObjectIdentifier(Value.self)
        let object = table.withLock { table -> Unmanaged<AnyObject> in
            for entry in table where entry.type == type && entry.kind == kind { return entry.object }
            let made = Unmanaged<AnyObject>.passRetained(make())  // never released
            table.append(Shared(type: type, kind: kind, object: made))
            return made
        }
        return FlagKeyConversionsReference(kept: Unmanaged<FlagKeyConversions<Value>>.fromOpaque(object.toOpaque()).takeUnretainedValue())
    }
}

/// A typed flag key with its code default, declared once and read everywhere:
///
/// ```swift
/// extension FlagKey where Value == Bool { static let newCheckout = FlagKey("new_checkout", default: false) }
/// let on = flags.value(.newCheckout)
/// ```
///
/// The default is returned when the flag is missing or mistyped, and is the **safe value**
/// every read returns while the kill switch is on. Keys are cheap to copy.
public struct FlagKey<Value: Sendable>: Sendable, CustomStringConvertible {
    /// The flag's name on the wire and on disk.
    public let name: String
    /// The name's ``FlagNameHash``, computed once here rather than on every read.
    @usableFromInline let nameHash: Int
    /// The conversions, shared by every key of `Value` unless custom.
    @usableFromInline let conversions: FlagKeyConversionsReference<Value>
    /// Whether the conversion is `Value(flagValue:)`, which specialised reads inline.
    @usableFromInline let convertsByType: Bool
    /// Whether reads look for unknown list members, tested without touching ``conversions``.
    @usableFromInline let auditsMembers: Bool
    /// The code default, also the safe value under the kill switch.
    public let defaultValue: Value

    /// A key with custom conversions; declare it once (a `static let`): its closures are never freed.
    /// - Parameters:
    ///   - convert: the Swift value for a flag value, or nil when it does not fit (TYPE_MISMATCH).
    ///   - encode: the flag value for a Swift value, used by overrides and test clients.
    public init(
        _ name: String,
        default defaultValue: Value,
        convert: @escaping @Sendable (FlagValue) -> Value?,
        encode: @escaping @Sendable (Value) -> FlagValue?
    ) {
        self.init(
            name, default: defaultValue,
            conversions: FlagKeyConversionsReference(keeping: FlagKeyConversions(convert: convert, encode: encode)), convertsByType: false)
    }

    /// The memberwise form.
    @inlinable
    init(_ name: String, default defaultValue: Value, conversions: FlagKeyConversionsReference<Value>, convertsByType: Bool) {
        self.name = name
        self.nameHash = FlagNameHash.of(name)
        self.conversions = conversions
        self.convertsByType = convertsByType
        self.auditsMembers = conversions.with { $0.unknownMembers != nil }
        self.defaultValue = defaultValue
    }

    /// A key whose conversions depend only on `Value`: shared with every key `kind` builds for it.
    @inlinable
    init(_ name: String, default defaultValue: Value, sharing kind: SharedConversionsKind, make: () -> FlagKeyConversions<Value>) {
        self.init(
            name, default: defaultValue, conversions: SharedKeyConversions.conversions(kind, for: Value.self, make: make),
            convertsByType: kind == .convertible)
    }

    /// The Swift value for `flagValue`, or nil when its type does not fit.
    @inlinable public func value(from flagValue: FlagValue) -> Value? { conversions.with { $0.convert(flagValue) } }

    /// The flag value for `value`, or nil when the type cannot be encoded.
    public func flagValue(for value: Value) -> FlagValue? { conversions.with { $0.encode(value) } }

    /// For keys that report unknown list members: those members' raw values.
    @inlinable var unknownMembers: (@Sendable (FlagValue) -> [String])? { conversions.with { $0.unknownMembers } }

    /// `name`.
    public var description: String { name }
}

extension FlagKey where Value: FlagValueConvertible {
    /// A key for `Bool`, `Int`, `Double`, `String`, ``FlagValue`` and lists or objects of them.
    @inlinable
    public init(_ name: String, default defaultValue: Value) {
        self.init(name, default: defaultValue, sharing: .convertible) {
            FlagKeyConversions(convert: { Value(flagValue: $0) }, encode: { $0.flagValue })
        }
    }
}

extension FlagKey where Value: RawRepresentable, Value.RawValue: FlagValueConvertible {
    /// A key for an enum (or any `RawRepresentable`) by raw value; unknown ones read as the default.
    @inlinable
    public init(_ name: String, default defaultValue: Value) {
        self.init(rawValueKey: name, default: defaultValue)
    }

    /// The raw-value conversions shared by both `RawRepresentable` initialisers.
    @inlinable
    init(rawValueKey name: String, default defaultValue: Value) {
        self.init(name, default: defaultValue, sharing: .rawValue) {
            FlagKeyConversions(
                convert: { Value.RawValue(flagValue: $0).flatMap(Value.init(rawValue:)) }, encode: { $0.rawValue.flagValue })
        }
    }
}

extension FlagKey where Value: RawRepresentable & Decodable, Value.RawValue: FlagValueConvertible {
    /// A key for a `Codable` enum with raw values, read by raw value.
    @inlinable
    public init(_ name: String, default defaultValue: Value) {
        self.init(rawValueKey: name, default: defaultValue)
    }
}

extension FlagKey where Value: Decodable {
    /// A key for a `Decodable` type via ``FlagValueDecoder``; undecodable values read as the default.
    public init(_ name: String, default defaultValue: Value) {
        self.init(name, default: defaultValue, sharing: .decodable) {
            FlagKeyConversions(
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
}

/// What hooks and the debug inspector ask of a key whose type they do not know.
extension FlagKey {
    /// The type reads of this key ask for.
    public var valueType: FlagValueType { FlagValueType(Value.self) }
    /// The default as JSON.
    public var defaultFlagValue: FlagValue? { flagValue(for: defaultValue) }
    /// Whether the key's conversion accepts `value`.
    public func accepts(_ value: FlagValue) -> Bool { self.value(from: value) != nil }
}

extension FlagKey {
    /// A key for an optional value, default nil: `null` or `""` reads as nil (none), a value that does not convert as
    /// TYPE_MISMATCH (the app-update keys of FeatureFlagsUI).
    package init<Wrapped: FlagValueConvertible>(optional name: String) where Value == Wrapped? {
        self.init(name, default: nil, sharing: .optionalConvertible) {
            FlagKeyConversions(
                convert: { value -> Wrapped?? in
                    if value == .null || value == .string("") { return .some(nil) }
                    guard let converted = Wrapped(flagValue: value) else { return nil }
                    return .some(converted)
                },
                encode: { $0?.flagValue ?? .null })
        }
    }
}
