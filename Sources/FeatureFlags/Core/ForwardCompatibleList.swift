/// An enum with a catch-all case for raw values this build does not know (a `Feature.unknown`
/// for features the server added after the app shipped). Declare `case unknown` and conform; lists of it read new server
/// values as `.unknown` instead of dropping them.
///
/// ```swift
/// enum Feature: String, UnknownCaseRepresentable { case usage, billing, team, unknown }
/// ```
public protocol UnknownCaseRepresentable: RawRepresentable {
    /// The case that stands for every raw value without a case of its own.
    static var unknown: Self { get }
}

/// A list of `RawRepresentable` members (an array of enum cases): the lists a forward-
/// compatible ``FlagKey`` reads. Arrays conform; nothing else needs to.
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
    /// A forward-compatible key for a list of enum members: members this build
    /// does not know — a feature added on the server after the app shipped — never fail the
    /// flag. They are dropped, or read as `.unknown` when the enum is
    /// ``UnknownCaseRepresentable`` (one `.unknown` per unknown member, order kept), and the
    /// client reports them once per activation as ``FlagEvent/unknownValues(flag:values:)``.
    ///
    /// ```swift
    /// static let features = FlagKey<[Feature]>("plan_feature_list", default: [.usage])
    /// ```
    ///
    /// A value that is not a list at all (nor text holding one) is still a TYPE_MISMATCH.
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
    /// The forward-compatible list key, for lists of `Codable` enums too (this overload only
    /// settles which initialiser applies: a plain `Decodable` key would fail the whole list
    /// on one unknown member).
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
