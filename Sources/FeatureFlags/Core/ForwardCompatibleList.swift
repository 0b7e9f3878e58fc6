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

    private init(forwardCompatibleList name: String, default defaultValue: Value) {
        self.init(name, default: defaultValue, sharing: .forwardCompatibleList) { Self.forwardCompatibleConversions() }
    }

    /// The conversions of forward-compatible list keys: they depend only on the member type.
    private static func forwardCompatibleConversions() -> FlagKeyConversions<Value> {
        typealias Member = Value.Member
        let unknownCase = (Member.self as? any UnknownCaseRepresentable.Type).flatMap { $0.unknown as? Member }
        let convert: @Sendable (FlagValue) -> Value? = { value in
            guard case .list(let items) = value.unwrappingText else { return nil }
            var members: [Member] = []
            members.reserveCapacity(items.count)
            for item in items {
                if let member = ListMembers.member(item, as: Member.self) {
                    members.append(member)
                } else if let unknownCase {
                    members.append(unknownCase)
                }
            }
            return Value(members: members)
        }
        return FlagKeyConversions(
            convert: convert,
            encode: { .list($0.members.map(\.rawValue.flagValue)) },
            unknownMembers: { value in
                guard case .list(let items) = value.unwrappingText else { return [] }
                return items.compactMap { item in
                    ListMembers.member(item, as: Member.self) == nil ? ListMembers.describe(item) : nil
                }
            })
    }
}

extension FlagKey where Value: RawValueList & Decodable, Value.Member: Sendable {
    /// The forward-compatible list key for `Codable` enums too (not the `Decodable` key, which fails on one unknown member).
    public init(_ name: String, default defaultValue: Value) {
        self.init(forwardCompatibleList: name, default: defaultValue)
    }
}

/// Helpers for forward-compatible lists.
enum ListMembers {
    /// The enum member for one list item, or nil when this build has no case for it.
    static func member<Element: RawRepresentable>(_ item: FlagValue, as: Element.Type) -> Element?
    where Element.RawValue: FlagValueConvertible {
        Element.RawValue(flagValue: item).flatMap(Element.init(rawValue:))
    }

    /// How an unknown member is named in events: strings as they are, anything else as JSON.
    static func describe(_ item: FlagValue) -> String {
        if case .string(let text) = item { return text }
        return FlagJSON.string(item)
    }
}
