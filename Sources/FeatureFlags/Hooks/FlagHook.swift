/// Code run around an explained read — ``FeatureFlagClient/details(_:)`` — at OpenFeature's four
/// stages: `before` the value is looked up, `after` a successful lookup, `error` when the lookup
/// or a `before`/`after` stage failed, and `finally` in every case. For logging, metrics,
/// tracing spans and validation.
///
/// ```swift
/// struct SlowFlagLog: FlagHook {
///     func after(_ context: FlagHookContext, details: FlagDetails<FlagValue?>, data: inout [String: any Sendable], hints: [String: FlagValue]) {
///         log.debug("\(context.flagKey) = \(details.value.map(String.init(describing:)) ?? "default") (\(details.reason))")
///     }
/// }
/// provider.addHooks(SlowFlagLog())
/// ```
///
/// Implement the stages you need; the others do nothing. Plain reads (``FeatureFlagClient/value(_:)``)
/// never run hooks — they keep their read budget.
///
/// What a hook cannot do (Docs/Hooks.md):
/// - **break a read**: a `before` or `after` stage that throws makes that read return the key's
///   default with reason `ERROR` and code `GENERAL` (as OpenFeature requires: an `after` that
///   throws is how a validation hook rejects a value), runs the `error` stages and is reported
///   once as ``FlagEvent/Kind/hookFailed``; `error` and `finally` stages that throw are
///   reported and ignored. Nothing a hook does can crash or change a plain read.
/// - **block reads**: stages run on the reading thread, outside every lock, so a slow hook
///   delays only the `details` call running it; a hook whose stage takes longer than the
///   client's hook time limit (50 ms by default) is disabled for the rest of the client's life
///   and reported as ``FlagEvent/Kind/hookDisabled``.
public protocol FlagHook: Sendable {
    /// The hook's name in events and logs. Default: its type's name.
    var name: String { get }
    /// Runs before the value is looked up. Throwing stops the remaining `before` stages and
    /// the lookup: the read returns the key's default with `ERROR`/`GENERAL`.
    func before(_ context: FlagHookContext, data: inout [String: any Sendable], hints: [String: FlagValue]) throws
    /// Runs after a successful lookup, with what the read returns. Throwing stops the remaining
    /// `after` stages and turns the read into the key's default with `ERROR`/`GENERAL`.
    func after(_ context: FlagHookContext, details: FlagDetails<FlagValue?>, data: inout [String: any Sendable], hints: [String: FlagValue]) throws
    /// Runs when the lookup failed (``FlagError``) or a `before`/`after` stage threw
    /// (a ``FlagError`` with `GENERAL` naming the hook and stage). Throwing here is reported and ignored.
    func error(_ context: FlagHookContext, error: any Error, data: inout [String: any Sendable], hints: [String: FlagValue]) throws
    /// Runs last, in every case, with the details the read returns. Throwing here is reported
    /// and ignored.
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
