/// An enum with a `case unknown` catch-all: lists of it read raw values this build lacks as `.unknown` instead of dropping them.
public protocol UnknownCaseRepresentable: RawRepresentable {
    /// The case that stands for every raw value without a case of its own.
    static var unknown: Self { get }
}

/// A list of `RawRepresentable` members, as a forward-compatible ``FlagKey`` reads; arrays conform.
public protocol RawValueList {
    /// The member type, e.g. a feature enum.
    associatedtype Member: RawRepresentable where Member.RawValue: FlagValueConvertible
    /// The list of `members`.
    init(members: [Member])
    /// The members, in order.
    var members: [Member] { get }
}

extension Array: RawValueList where Element: RawRepresentable, Element.RawValue: FlagValueConvertible {
    /// The list of `members`.
    public init(members: [Element]) { self = members }
    /// The members, in order.
    public var members: [Element] { self }
}

extension FlagKey where Value: RawValueList, Value.Member: Sendable {
    /// A key for a list of enum members: unknown members are dropped (or `.unknown`) and reported, not a TYPE_MISMATCH.
    public init(_ name: String, default defaultValue: Value) {
        self.init(forwardCompatibleList: name, default: defaultValue)
    }

    /// The key with conversions that depend only on the member type.
    private init(forwardCompatibleList name: String, default defaultValue: Value) {
        typealias Member = Value.Member
        self.init(name, default: defaultValue, sharing: .forwardCompatibleList) {
            let unknownCase = (Member.self as? any UnknownCaseRepresentable.Type).flatMap { $0.unknown as? Member }
            let member: @Sendable (FlagValue) -> Member? = { Member.RawValue(flagValue: $0).flatMap(Member.init(rawValue:)) }
            return FlagKeyConversions(
                convert: { value in
                    guard case .list(let items) = value.unwrappingText else { return nil }
                    return Value(members: items.compactMap { member($0) ?? unknownCase })
                },
                encode: { .list($0.members.map(\.rawValue.flagValue)) },
                unknownMembers: { value in
                    guard case .list(let items) = value.unwrappingText else { return [] }
                    // Named in events: strings as they are, anything else as JSON.
                    return items.compactMap { member($0) == nil ? ($0.stringValue ?? FlagJSON.string($0)) : nil }
                })
        }
    }
}

extension FlagKey where Value: RawValueList & Decodable, Value.Member: Sendable {
    /// The forward-compatible list key for `Codable` enums too (not the `Decodable` key, which fails on one unknown member).
    public init(_ name: String, default defaultValue: Value) {
        self.init(forwardCompatibleList: name, default: defaultValue)
    }
}
