import Foundation

// `FlagKey`, the type apps use, is further down. The two types first are how a key holds the
// closures that convert its values without reference counting: a key is copied on every read
// (from a `static let`, an array, a dictionary), and a retain and release on a shared object
// would cost more than the lookup itself. That is safe because every conversions object is
// kept alive for the life of the process — one per value type, shared (`SharedKeyConversions`),
// or one per key built with closures of its own (held once, never released: declare such keys
// once, in `static let`s). The `Unmanaged` below is only that: a reference not counted, and
// lent to a call without a retain (`_withUnsafeGuaranteedRef`).

/// The conversions of a ``FlagKey``: from and to ``FlagValue``, and for lists of enums the
/// members a build does not know.
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
        unknownMembers: (@Sendable (FlagValue) -> [String])? = nil
    ) {
        self.convert = convert
        self.encode = encode
        self.unknownMembers = unknownMembers
    }
}

/// How a ``FlagKey`` holds its conversions: unretained, so that copying a key touches no
/// reference count (a key kept in an array, a dictionary or a `static let` is copied on every
/// read). Every conversions object lives as long as the process: the package's initialisers
/// share one per value type (``SharedKeyConversions``); a key built with closures of its own
/// keeps them (see ``FlagKey/init(_:default:convert:encode:)``).
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

    /// Runs `body` with the conversions, without retaining them for the call (they are never
    /// released, so the reference is valid throughout).
    @inlinable @inline(__always)
    func with<R>(_ body: (FlagKeyConversions<Value>) -> R) -> R { object._withUnsafeGuaranteedRef(body) }
}

/// Which of the package's initialisers built a shared conversions object (together with the
/// value type, it names the object).
@usableFromInline
enum SharedConversionsKind: UInt8, Sendable {
    case convertible, rawValue, decodable, forwardCompatibleList, applicationUpdate
}

/// The conversions objects shared by keys: one per value type and initialiser, created on first
/// use and kept for the life of the process (a handful of objects: one per flag type an app reads).
@usableFromInline
enum SharedKeyConversions {
    /// One shared object: the value type and initialiser it is for.
    private struct Shared {
        let type: ObjectIdentifier
        let kind: SharedConversionsKind
        let object: Unmanaged<AnyObject>
    }

    /// A list, searched linearly: it holds one entry per value type an app reads (a handful),
    /// and a list of a plain struct costs nothing to set up at launch, unlike a dictionary keyed
    /// by a type of our own.
    private static let table = Locked<[Shared]>([])

    /// The shared conversions for `Value` built by `kind`'s initialiser; `make` builds them the
    /// first time.
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
/// extension FlagKey where Value == Bool {
///     static let newCheckout = FlagKey("new_checkout", default: false)
/// }
/// let on = flags.value(.newCheckout)
/// ```
///
/// The default is what a read returns when the flag is missing or has the wrong type, and
/// it is the **safe value** every read returns while the kill switch is on.
///
/// Keys are free to copy: keep them in `static let`s, arrays or dictionaries alike. Apart from
/// the name (and a default that is itself reference-counted, such as a long `String`), a key
/// holds nothing whose reference count a copy changes, and it carries its name's hash, so a read
/// does not hash the name again.
public struct FlagKey<Value: Sendable>: Sendable, CustomStringConvertible {
    /// The flag's name on the wire and on disk.
    public let name: String
    /// The name's ``FlagNameHash``, computed once here rather than on every read.
    @usableFromInline let nameHash: Int
    /// The conversions, shared by every key of `Value` unless custom.
    @usableFromInline let conversions: FlagKeyConversionsReference<Value>
    /// Whether the conversion is `Value(flagValue:)` (``FlagValueConvertible``): then a read
    /// specialised for `Value` converts inline without touching ``conversions``.
    @usableFromInline let convertsByType: Bool
    /// Whether reads must look for unknown list members (``FlagKeyConversions/unknownMembers``
    /// is set): one byte the read path tests without touching ``conversions``.
    @usableFromInline let auditsMembers: Bool
    /// The code default, also the safe value under the kill switch.
    public let defaultValue: Value

    /// A key with custom conversions, for types none of the other initialisers fit.
    ///
    /// Declare such a key once (a `static let`): its closures are kept for the life of the
    /// process, so that copying the key costs nothing — building one per read would keep one
    /// small object per call.
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

    /// The Swift value for a flag value, or nil when its type does not fit.
    @inlinable func convert(_ flagValue: FlagValue) -> Value? { conversions.with { $0.convert(flagValue) } }
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
    /// A key for an enum (or any `RawRepresentable`) carried as its raw value; an unknown
    /// raw value is a TYPE_MISMATCH and reads as the default.
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
