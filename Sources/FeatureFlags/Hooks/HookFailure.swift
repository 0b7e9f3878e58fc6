/// A hook stage threw: which hook, stage and error; `error` stages get it as a `GENERAL` ``FlagError``.
struct HookFailure: Sendable, Equatable, CustomStringConvertible {
    /// The hook's ``FlagHook/name``.
    let hook: String
    /// The stage that threw: `before`, `after`, `error` or `finally`.
    let stage: String
    /// What it threw, as text.
    let message: String

    /// One line: `hook "name" failed in before: message`.
    var description: String { "hook \"\(hook)\" failed in \(stage): \(message)" }
}
