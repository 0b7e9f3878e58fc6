/// The one protocol app modules depend on. Receive it in an initialiser; read flags
/// synchronously. Every client in the package conforms, so any can be injected anywhere —
/// the online provider in the app, the fallback alone in an extension, an in-memory
/// client in tests.
///
/// Reads never throw, never block on I/O and never crash: a missing flag returns the key's
/// default with `FLAG_NOT_FOUND`, a value of the wrong type returns it with `TYPE_MISMATCH`.
public protocol FeatureFlagClient: Sendable {
    /// The raw value a read of `name` starts from: nil when the flag is missing, carries no
    /// value, or is forced to its default by the kill switch. Untyped lookups use it.
    func flagValue(_ name: String) -> FlagValue?
    /// ``flagValue(_:)`` for a ``FlagKey``'s read, given the hash the key computed for its name
    /// when it was created. Clients of the package look the name up by it; the default ignores
    /// it and calls ``flagValue(_:)``.
    func flagValue(_ name: String, nameHash: Int) -> FlagValue?
    /// The value plus variant, reason, error code, source, snapshot version and age. The
    /// default builds them from ``flagDetails(_:nameHash:)``.
    func details<Value>(_ key: FlagKey<Value>) -> FlagDetails<Value>
    /// ``details(_:)`` run between the client's hooks and `hooks` (this read's own, which get
    /// `hints`), in OpenFeature's order (see ``FlagHook``). The default runs `hooks` alone
    /// around ``details(_:)``, with the anonymous context.
    func details<Value>(_ key: FlagKey<Value>, hooks: [any FlagHook], hints: [String: FlagValue]) -> FlagDetails<Value>
    /// The untyped read with its explanation — variant, reason, error code, source, snapshot
    /// version, age, metadata — of the flag `name`, whose ``FlagKey`` hash is `nameHash`.
    /// `value` is the raw value a typed read converts, or nil where the key's default applies
    /// (missing, valueless, killed). ``details(_:)`` builds a key's typed details from it.
    func flagDetails(_ name: String, nameHash: Int) -> FlagDetails<FlagValue?>
    /// The snapshot being served now.
    var snapshot: FlagSnapshot { get }
    /// The client's status now.
    var status: ProviderStatus { get }
    /// Whether the kill switch is on: every read returns its key's safe default, and a UI
    /// should say so ("limited mode": a banner, dimmed navigation, disabled feature rows).
    var isKillSwitchActive: Bool { get }
    /// A stream of value changes from now on; ends when the client shuts down. Each change
    /// names the flags whose effective values changed (every flag when the kill switch flips),
    /// the snapshot now served, and whether the kill switch is on after it. Flags in no table
    /// cannot be named: when how they read changes (``FlagSnapshot/missingFlagsAreOff``), the
    /// change names only the others, maybe none — read your keys again. Another snapshot with
    /// the same values (a new version, another context's equal values) comes as a change that
    /// names no key. A reader that falls
    /// more than 128 changes behind reads, in place of the oldest it lost, one change naming
    /// every key they named (with the newest of their snapshots): no key is lost.
    func changes() -> AsyncStream<FlagChange>
    /// A stream of events from now on; ends when the client shuts down. A reader that falls
    /// more than 128 events behind loses the oldest and reads ``FlagEvent/eventsDropped(count:)``
    /// in their place.
    func events() -> AsyncStream<FlagEvent>
    /// Records that something happened — `checkout_completed`, with an amount — for the
    /// experiments the flags run: the package's clients send it as a ``FlagEvent/tracked(_:)``
    /// event, with the context as much as they are configured to show (no attribute values by
    /// default), to event subscribers and the event handler. The default does nothing.
    func track(_ eventName: String, value: Double?, attributes: [String: FlagValue])
    /// Told by a read that `flag` holds list members the app's enum does not know; a client
    /// reports them as ``FlagEvent/unknownValues(flag:values:)``, once per flag until its
    /// values change. The default does nothing.
    func noteUnknownValues(_ values: [String], in flag: String)
}

extension FeatureFlagClient {
    /// The flag's value, or the key's default when it is missing, mistyped or killed.
    ///
    /// Not a protocol requirement on purpose: every client answers it from
    /// ``flagValue(_:)``, and as an inlinable extension it is specialised for the key's type
    /// at the call site even through `any FeatureFlagClient`, instead of running generic code
    /// behind a witness table.
    @inlinable @inline(__always)
    public func value<Value>(_ key: FlagKey<Value>) -> Value { generalValue(key) }

    /// The flag's value, or the key's default when it is missing, mistyped or killed.
    ///
    /// For `Bool`, `Int`, `Double`, `String`, ``FlagValue`` and their lists and objects: the
    /// conversion is inlined where the read is written (keys with custom conversions take the
    /// general path).
    @inlinable @inline(__always)
    public func value<Value: FlagValueConvertible>(_ key: FlagKey<Value>) -> Value {
        guard key.convertsByType else { return generalValue(key) }
        guard let raw = flagValue(key.name, nameHash: key.nameHash), let typed = Value(flagValue: raw) else { return key.defaultValue }
        return typed
    }

    /// The read through the key's conversion closure: every key of a type that is not
    /// ``FlagValueConvertible``, and those that are but carry custom conversions.
    @inlinable @inline(__always)
    func generalValue<Value>(_ key: FlagKey<Value>) -> Value {
        if key.auditsMembers { return auditedValue(key) }
        guard let raw = flagValue(key.name, nameHash: key.nameHash), let typed = key.convert(raw) else { return key.defaultValue }
        return typed
    }

    /// The read of a key that reports unknown list members (forward-compatible enum lists),
    /// kept out of line so that other reads pay one Boolean test for it.
    @usableFromInline
    func auditedValue<Value>(_ key: FlagKey<Value>) -> Value {
        let raw = flagValue(key.name, nameHash: key.nameHash)
        if let audit = key.unknownMembers, let raw {
            let unknown = audit(raw)
            if !unknown.isEmpty { noteUnknownValues(unknown, in: key.name) }
        }
        guard let raw, let typed = key.convert(raw) else { return key.defaultValue }
        return typed
    }

    /// The value plus variant, reason, error code, source, snapshot version and age, from
    /// ``flagDetails(_:nameHash:)`` (the package's clients answer it themselves, in one step).
    @inlinable
    public func details<Value>(_ key: FlagKey<Value>) -> FlagDetails<Value> {
        let raw = flagDetails(key.name, nameHash: key.nameHash)
        if key.auditsMembers, raw.source != .killSwitch, let found = raw.value, let audit = key.unknownMembers {
            let unknown = audit(found)
            if !unknown.isEmpty { noteUnknownValues(unknown, in: key.name) }
        }
        return raw.typed(for: key)
    }

    /// Runs `hooks` alone around ``details(_:)`` (clients without hooks of their own).
    public func details<Value>(_ key: FlagKey<Value>, hooks: [any FlagHook], hints: [String: FlagValue]) -> FlagDetails<Value> {
        FlagHooks.unattached.run(
            key, invocation: hooks, hints: hints, context: { .anonymous },
            provider: String(describing: type(of: self))
        ) { details(key) }
    }

    /// ``details(_:hooks:hints:)`` without hints.
    public func details<Value>(_ key: FlagKey<Value>, hooks: [any FlagHook]) -> FlagDetails<Value> {
        details(key, hooks: hooks, hints: [:])
    }

    /// The untyped details of `name` (see ``flagDetails(_:nameHash:)``).
    public func flagDetails(_ name: String) -> FlagDetails<FlagValue?> { flagDetails(name, nameHash: FlagNameHash.of(name)) }

    /// ``flagValue(_:)``: a client without a table of its own has no use for the hash.
    public func flagValue(_ name: String, nameHash: Int) -> FlagValue? { flagValue(name) }

    /// Does nothing: clients without an event stream track nothing.
    public func track(_ eventName: String, value: Double?, attributes: [String: FlagValue]) {}

    /// ``track(_:value:attributes:)`` with nothing but the name.
    public func track(_ eventName: String) { track(eventName, value: nil, attributes: [:]) }

    /// ``track(_:value:attributes:)`` with a value and no attributes.
    public func track(_ eventName: String, value: Double) { track(eventName, value: value, attributes: [:]) }

    /// ``track(_:value:attributes:)`` with attributes and no value.
    public func track(_ eventName: String, attributes: [String: FlagValue]) { track(eventName, value: nil, attributes: attributes) }

    /// Does nothing: clients without an event stream ignore unknown list members.
    public func noteUnknownValues(_ values: [String], in flag: String) {}

    /// The Boolean flag `name`, or `defaultValue`.
    public func bool(_ name: String, default defaultValue: Bool) -> Bool {
        flagValue(name).flatMap(Bool.init(flagValue:)) ?? defaultValue
    }

    /// The integer flag `name`, or `defaultValue`.
    public func int(_ name: String, default defaultValue: Int) -> Int {
        flagValue(name).flatMap(Int.init(flagValue:)) ?? defaultValue
    }

    /// The number flag `name`, or `defaultValue`.
    public func double(_ name: String, default defaultValue: Double) -> Double {
        flagValue(name).flatMap(Double.init(flagValue:)) ?? defaultValue
    }

    /// The string flag `name`, or `defaultValue`.
    public func string(_ name: String, default defaultValue: String) -> String {
        flagValue(name).flatMap(String.init(flagValue:)) ?? defaultValue
    }

    /// Whether the Boolean flag `key` is on.
    public func isEnabled(_ key: FlagKey<Bool>) -> Bool { value(key) }

    /// The values of `key`: the current one first, then one each time it changes.
    public func values<Value: Equatable>(of key: FlagKey<Value>) -> AsyncStream<Value> {
        let source = changes()
        let first = value(key)
        return AsyncStream { continuation in
            continuation.yield(first)
            let task = Task {
                var last = first
                for await _ in source {
                    let now = self.value(key)
                    if now != last {
                        last = now
                        continuation.yield(now)
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

extension FlagDetails where Value == FlagValue? {
    /// The typed details for `key`: the raw value converted, the key's default where there is
    /// none, and TYPE_MISMATCH (source `code_default`) where it does not convert.
    @inlinable
    public consuming func typed<Typed>(for key: FlagKey<Typed>) -> FlagDetails<Typed> {
        guard let raw = value else {
            return FlagDetails<Typed>(
                key: self.key, value: key.defaultValue, extras: extras, reason: reason, errorCode: errorCode,
                errorMessage: errorMessage, source: source, snapshotVersion: snapshotVersion, age: age)
        }
        guard let typed = key.convert(raw) else {
            return FlagDetails<Typed>(
                key: self.key, value: key.defaultValue, extras: extras, reason: .error, errorCode: .typeMismatch,
                errorMessage: "expected \(Typed.self), found \(raw.typeName)", source: .codeDefault, snapshotVersion: snapshotVersion,
                age: age)
        }
        return FlagDetails<Typed>(
            key: self.key, value: typed, extras: extras, reason: reason, errorCode: errorCode, errorMessage: errorMessage,
            source: source, snapshotVersion: snapshotVersion, age: age)
    }
}
