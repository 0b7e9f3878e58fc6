/// One broken rule, with where: a schema violation, or a problem of a flagd definitions
/// document.
public struct FlagViolation: Sendable, Hashable, CustomStringConvertible {
    /// Where: `flags.plan_themeColor`, `rules[1].flags.plan_feature_list[3]`, `payload`.
    public let path: String
    /// What is wrong (names no secrets; values only as far as the schema concerns them).
    public let message: String

    /// A violation.
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    /// `path: message`, on one line: control characters (a flag name from a service may hold
    /// any) are escaped as `\u{…}`.
    public var description: String { FlagText.printable("\(path): \(message)") }
}
