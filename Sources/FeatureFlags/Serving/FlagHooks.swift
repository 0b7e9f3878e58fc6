/// A client's hooks, run in OpenFeature's stack order, isolated and time-limited; reads never lock.
package final class FlagHooks: Sendable {
    /// One hook of a read, known by its identity: a registered one can be disabled.
    private final class Slot: Sendable {
        let hook: any FlagHook
        init(_ hook: any FlagHook) { self.hook = hook }
    }

    private final class List: Sendable {
        let slots: [Slot]
        init(_ slots: [Slot]) { self.slots = slots }
    }

    private let publication: ReadPublication<List>
    /// Hook-and-stage pairs whose failure was reported already; its lock also orders publishes.
    private let reported = Locked<Set<String>>([])
    private let clock: any ElapsedClock
    /// A stage longer than this disables its (client-level) hook.
    package let timeLimit: Duration
    /// The time limit unless configured: 50 ms, three frames at 60 Hz.
    package static let defaultTimeLimit = Duration.milliseconds(50)
    private let emit: @Sendable (FlagEvent) -> Void

    /// A client's hooks, starting with `hooks`; events go to `emit`.
    init(_ hooks: [any FlagHook], timeLimit: Duration, clock: any ElapsedClock, emit: @escaping @Sendable (FlagEvent) -> Void) {
        self.timeLimit = timeLimit
        self.clock = clock
        self.emit = emit
        publication = ReadPublication(List(hooks.map(Slot.init)))
        startsEmpty = hooks.isEmpty
    }

    /// Whether the client started without hooks (then one atomic load tells a read so).
    private let startsEmpty: Bool

    /// Whether no hook has ever been registered (none at the start, none added since).
    @inline(__always)
    private var neverHadHooks: Bool { startsEmpty && publication.isPristine }

    /// Whether a read without hooks of its own runs none: none registered now.
    @inline(__always)
    package var areIdle: Bool { neverHadHooks || publication.read { $0.slots.isEmpty } }

    /// Runs a read's hooks for clients without hooks of their own; failures go nowhere.
    package static let unattached = FlagHooks([], timeLimit: defaultTimeLimit, clock: CoarseElapsedClock()) { _ in }

    /// The hooks registered and not disabled, in registration order.
    package var all: [any FlagHook] { publication.read { $0.slots.map(\.hook) } }

    /// Registers `hooks` after those already registered.
    package func add(_ hooks: [any FlagHook]) {
        guard !hooks.isEmpty else { return }
        reported.withLock { _ in publication.publish(List(publication.read { $0.slots } + hooks.map(Slot.init))) }
    }

    /// Runs `evaluate` between the client's hooks and `invocation`'s.
    @inline(__always)
    package func run<Value>(
        _ key: FlagKey<Value>, invocation: [any FlagHook] = [], hints: [String: FlagValue] = [:],
        context: () -> EvaluationContext, provider: @autoclosure () -> String, evaluate: () -> FlagDetails<Value>
    ) -> FlagDetails<Value> {
        if invocation.isEmpty, areIdle { return evaluate() }
        return runHooks(key, invocation: invocation, hints: hints, context: context(), provider: provider(), evaluate: evaluate)
    }

    /// The generic half of a hooked read; the stages themselves run non-generic.
    private func runHooks<Value>(
        _ key: FlagKey<Value>, invocation: [any FlagHook], hints: [String: FlagValue], context evaluationContext: EvaluationContext,
        provider: String, evaluate: () -> FlagDetails<Value>
    ) -> FlagDetails<Value> {
        let context = FlagHookContext(
            flagKey: key.name, valueType: key.valueType, defaultValue: key.defaultFlagValue, evaluationContext: evaluationContext,
            providerName: provider)
        var typed: FlagDetails<Value>?
        let failure = stages(invocation: invocation, context: context, hints: hints) {
            let details = evaluate()
            typed = details
            return Self.view(details, key)
        }
        guard failure == nil, let typed else {
            return FlagDetails(
                key: key.name, value: key.defaultValue, reason: .error, errorCode: .general, errorMessage: failure?.description,
                source: .codeDefault)
        }
        return typed
    }

    /// Runs the stages around `evaluate`; returns the failure that defaults the read, if any.
    private func stages(
        invocation: [any FlagHook], context: FlagHookContext, hints: [String: FlagValue], evaluate: () -> FlagDetails<FlagValue?>
    ) -> HookFailure? {
        // The read's own hooks are never in the published list: never disabled.
        let hooks = publication.read { $0.slots } + invocation.map(Slot.init)
        var data = [[String: any Sendable]](repeating: [:], count: hooks.count)
        // Each stage is timed from the end of the one before (one clock read per stage).
        var mark = clock.now()
        /// Runs `stage` of the hooks in `order`. Stopping stages end at the first failure and return it (reported by
        /// the caller); the others report each failure and run the rest.
        func run(
            _ stage: HookStage, _ order: [Int], stops: Bool = false, _ body: (any FlagHook, inout [String: any Sendable]) throws -> Void
        ) -> HookFailure? {
            for i in order {
                var failure: HookFailure?
                do {
                    try body(hooks[i].hook, &data[i])
                } catch {
                    failure = HookFailure(hook: hooks[i].hook.name, stage: stage.rawValue, message: "\(error)")
                    if !stops, let failure { report(failure, flag: context.flagKey) }
                }
                let now = clock.now()
                check(now - mark, hooks[i], stage)
                mark = now
                if stops, failure != nil { return failure }
            }
            return nil
        }

        var failure = run(.before, Array(hooks.indices), stops: true) { hook, data in try hook.before(context, data: &data, hints: hints) }
        var details: FlagDetails<FlagValue?>
        var lookupFailure: FlagError?
        if failure == nil {
            details = evaluate()
            mark = clock.now()   // the lookup is not a hook's time
            if let code = details.errorCode {
                lookupFailure = FlagError(code, details.errorMessage ?? code.rawValue)
            } else {
                let read = details
                failure = run(.after, hooks.indices.reversed(), stops: true) { hook, data in
                    try hook.after(context, details: read, data: &data, hints: hints)
                }
            }
        } else {
            details = FlagDetails(key: context.flagKey, value: context.defaultValue, reason: .error, source: .codeDefault)
        }
        if let failure {
            report(failure, flag: context.flagKey)
            details = FlagDetails(
                key: context.flagKey, value: context.defaultValue, reason: .error, errorCode: .general,
                errorMessage: failure.description, source: .codeDefault)
        }
        let last = Array(hooks.indices.reversed())
        if let problem = failure.map({ FlagError(.general, $0.description) }) ?? lookupFailure {
            _ = run(.error, last) { hook, data in try hook.error(context, error: problem, data: &data, hints: hints) }
        }
        let read = details
        _ = run(.finally, last) { hook, data in try hook.finally(context, details: read, data: &data, hints: hints) }
        return failure
    }

    /// What hooks see of a read: its details with the value as JSON.
    private static func view<Value>(_ details: FlagDetails<Value>, _ key: FlagKey<Value>) -> FlagDetails<FlagValue?> {
        FlagDetails<FlagValue?>(
            key: details.key, value: key.flagValue(for: details.value), variant: details.variant, reason: details.reason,
            errorCode: details.errorCode, errorMessage: details.errorMessage, source: details.source,
            snapshotVersion: details.snapshotVersion, age: details.age, metadata: details.metadata)
    }

    /// Ends a stage's timing; disables a client hook whose stage took longer than the limit.
    private func check(_ elapsed: Duration, _ slot: Slot, _ stage: HookStage) {
        guard elapsed > timeLimit else { return }
        let removed = reported.withLock { _ -> Bool in
            let current = publication.read { $0.slots }
            guard current.contains(where: { $0 === slot }) else { return false }
            publication.publish(List(current.filter { $0 !== slot }))
            return true
        }
        if removed {
            emit(.hookDisabled(hook: slot.hook.name, stage: stage.rawValue, elapsedMilliseconds: Int(elapsed.milliseconds)))
        }
    }

    /// Reports a hook's failure, once per hook and stage.
    private func report(_ failure: HookFailure, flag: String) {
        let first = reported.withLock { $0.insert("\(failure.hook)\u{0}\(failure.stage)").inserted }
        if first { emit(.hookFailed(hook: failure.hook, stage: failure.stage, message: failure.message, flag: flag)) }
    }
}
