/// One broken rule and where: a schema violation or a flagd definitions problem.
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

    /// `path: message` on one line, control characters escaped as `\u{…}`.
    public var description: String { FlagText.printable("\(path): \(message)") }
}
