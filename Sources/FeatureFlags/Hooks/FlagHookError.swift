/// A hook stage threw: which hook, which stage, and what it threw.
public struct FlagHookError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The hook's ``FlagHook/name``.
    public let hook: String
    /// The stage that threw.
    public let stage: FlagHookStage
    /// What it threw, as text.
    public let message: String

    /// One line: `hook "name" failed in before: message`.
    public var description: String { "hook \"\(hook)\" failed in \(stage.rawValue): \(message)" }
}
