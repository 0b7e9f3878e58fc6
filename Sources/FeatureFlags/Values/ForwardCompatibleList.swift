/// An enum with a catch-all case for raw values this build does not know (seed 001's
/// `Feature.unknown`). Declare `case unknown` and conform; lists of it read new server
/// values as `.unknown` instead of dropping them.
///
/// ```swift
/// enum Feature: String, UnknownCaseRepresentable { case usage, billing, team, unknown }
/// ```
public protocol UnknownCaseRepresentable: RawRepresentable {
    /// The case that stands for every raw value without a case of its own.
    static var unknown: Self { get }
}

extension FlagKey {
    /// A forward-compatible key for a list of enum members (seed 001): members this build
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
    public init<Element>(_ name: String, default defaultValue: [Element])
    where Value == [Element], Element: RawRepresentable & Sendable, Element.RawValue: FlagValueConvertible {
        self.init(forwardCompatibleList: name, default: defaultValue)
    }

    /// The same key for `Codable` enums (this overload only settles which initialiser applies).
    public init<Element>(_ name: String, default defaultValue: [Element])
    where Value == [Element], Element: RawRepresentable & Sendable & Decodable, Element.RawValue: FlagValueConvertible {
        self.init(forwardCompatibleList: name, default: defaultValue)
    }

    private init<Element>(forwardCompatibleList name: String, default defaultValue: [Element])
    where Value == [Element], Element: RawRepresentable & Sendable, Element.RawValue: FlagValueConvertible {
        let unknownCase = (Element.self as? any UnknownCaseRepresentable.Type).flatMap { $0.unknown as? Element }
        let convert: @Sendable (FlagValue) -> [Element]? = { value in
            guard case .list(let items) = value.unwrappingText else { return nil }
            var members: [Element] = []
            members.reserveCapacity(items.count)
            for item in items {
                if let member = ForwardCompatibleList.member(item, as: Element.self) {
                    members.append(member)
                } else if let unknownCase {
                    members.append(unknownCase)
                }
            }
            return members
        }
        self.init(
            name, default: defaultValue, convert: convert,
            encode: { .list($0.map(\.rawValue.flagValue)) },
            resolve: { found in found.flatMap(convert) ?? defaultValue },
            unknownMembers: { value in
                guard case .list(let items) = value.unwrappingText else { return [] }
                return items.compactMap { item in
                    ForwardCompatibleList.member(item, as: Element.self) == nil ? ForwardCompatibleList.describe(item) : nil
                }
            })
    }
}

/// Helpers for forward-compatible lists.
enum ForwardCompatibleList {
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
