/// Code run around ``FeatureFlagClient/details(_:)`` at OpenFeature's four stages (Docs/Hooks.md); plain reads never run hooks.
/// Stages run on the reading thread, outside every lock. A stage that throws is reported (``FlagEvent/Kind/hookFailed``);
/// one slower than the client's hook time limit (50 ms by default) disables the hook (``FlagEvent/Kind/hookDisabled``).
public protocol FlagHook: Sendable {
    /// The hook's name in events and logs. Default: its type's name.
    var name: String { get }
    /// Runs before the lookup. Throwing skips the lookup: the read returns the key's default with `ERROR`/`GENERAL`.
    func before(_ context: FlagHookContext, data: inout [String: any Sendable], hints: [String: FlagValue]) throws
    /// Runs after a successful lookup. Throwing makes the read return the key's default with `ERROR`/`GENERAL`.
    func after(_ context: FlagHookContext, details: FlagDetails<FlagValue?>, data: inout [String: any Sendable], hints: [String: FlagValue]) throws
    /// Runs when the lookup or a `before`/`after` stage failed (a ``FlagError``). Throwing here is reported and ignored.
    func error(_ context: FlagHookContext, error: any Error, data: inout [String: any Sendable], hints: [String: FlagValue]) throws
    /// Runs last, always, with the details the read returns. Throwing here is reported and ignored.
    func finally(_ context: FlagHookContext, details: FlagDetails<FlagValue?>, data: inout [String: any Sendable], hints: [String: FlagValue]) throws
}

extension FlagHook {
    /// The type's name.
    public var name: String { String(describing: Self.self) }
    /// Does nothing.
    public func before(_ context: FlagHookContext, data: inout [String: any Sendable], hints: [String: FlagValue]) throws {}
    /// Does nothing.
    public func after(_ context: FlagHookContext, details: FlagDetails<FlagValue?>, data: inout [String: any Sendable], hints: [String: FlagValue]) throws {}
    /// Does nothing.
    public func error(_ context: FlagHookContext, error: any Error, data: inout [String: any Sendable], hints: [String: FlagValue]) throws {}
    /// Does nothing.
    public func finally(_ context: FlagHookContext, details: FlagDetails<FlagValue?>, data: inout [String: any Sendable], hints: [String: FlagValue]) throws {}
}

/// A stage of a hook; events name it by its raw value (`before`, `after`, `error`, `finally`).
enum HookStage: String, Sendable, Hashable, CaseIterable {
    /// Before the lookup.
    case before
    /// After a successful lookup.
    case after
    /// After a failure.
    case error
    /// Last, always.
    case finally
}
