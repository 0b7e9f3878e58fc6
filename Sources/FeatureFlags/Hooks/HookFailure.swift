/// A hook stage threw: which hook, which stage, and what it threw. Reported as a
/// ``FlagEvent/Kind/hookFailed`` event; the hooks' `error` stage is given it as a
/// ``FlagError`` with `GENERAL` and ``description`` as the message.
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
