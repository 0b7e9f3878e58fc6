/// The failed lookup an `error` stage is told about: the error code and message the read's
/// details carry (FLAG_NOT_FOUND, TYPE_MISMATCH, …).
public struct FlagEvaluationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The OpenFeature error code.
    public let code: FlagErrorCode
    /// What went wrong.
    public let message: String

    /// An error with `code` and `message`.
    public init(code: FlagErrorCode, message: String) {
        self.code = code
        self.message = message
    }

    /// `CODE: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}

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
