/// The protocol app modules depend on: synchronous flag reads from any client. Reads never
/// throw, block on I/O or crash: a missing flag returns the key's default with
/// `FLAG_NOT_FOUND`, a mistyped one with `TYPE_MISMATCH`.
public protocol FeatureFlagClient: Sendable {
    /// The raw value of `name`; nil when the flag is missing, has no value or is killed.
    func flagValue(_ name: String) -> FlagValue?
    /// ``flagValue(_:)`` given the key's precomputed name hash; the default ignores the hash.
    func flagValue(_ name: String, nameHash: Int) -> FlagValue?
    /// The value plus variant, reason, error code, source, snapshot version and age.
    func details<Value>(_ key: FlagKey<Value>) -> FlagDetails<Value>
    /// ``details(_:)`` run between the client's hooks and `hooks`, in OpenFeature's order.
    func details<Value>(_ key: FlagKey<Value>, hooks: [any FlagHook], hints: [String: FlagValue]) -> FlagDetails<Value>
    /// The untyped details of `name`; `value` is nil where the key's default applies.
    func flagDetails(_ name: String, nameHash: Int) -> FlagDetails<FlagValue?>
    /// The snapshot being served now.
    var snapshot: FlagSnapshot { get }
    /// The client's status now.
    var status: ProviderStatus { get }
    /// Whether the kill switch is on: every read returns its key's safe default.
    var isKillSwitchActive: Bool { get }
    /// Value changes until shutdown, naming the flags whose values changed (maybe none: re-read
    /// your keys). A reader over 128 changes behind gets the lost ones merged into one.
    func changes() -> AsyncStream<FlagChange>
    /// Events until shutdown; a reader over 128 behind reads ``FlagEvent/eventsDropped(count:)``.
    func events() -> AsyncStream<FlagEvent>
    /// Records an app event for experiments as ``FlagEvent/tracked(_:)``. The default does nothing.
    func track(_ eventName: String, value: Double?, attributes: [String: FlagValue])
    /// Reports `flag`'s unknown list members, once per flag until its values change.
    func noteUnknownValues(_ values: [String], in flag: String)
}

extension FeatureFlagClient {
    /// The flag's value, or the key's default when it is missing, mistyped or killed.
    @inlinable @inline(__always)
    public func value<Value>(_ key: FlagKey<Value>) -> Value { generalValue(key) }

    /// The flag's value, or the key's default when it is missing, mistyped or killed.
    @inlinable @inline(__always)
    public func value<Value: FlagValueConvertible>(_ key: FlagKey<Value>) -> Value {
        guard key.convertsByType else { return generalValue(key) }
        guard let raw = flagValue(key.name, nameHash: key.nameHash), let typed = Value(flagValue: raw) else { return key.defaultValue }
        return typed
    }

    /// The read through the key's conversion closure (custom or non-convertible types).
    @inlinable @inline(__always)
    func generalValue<Value>(_ key: FlagKey<Value>) -> Value {
        if key.auditsMembers { return auditedValue(key) }
        guard let raw = flagValue(key.name, nameHash: key.nameHash), let typed = key.value(from: raw) else { return key.defaultValue }
        return typed
    }

    /// The read of a key that reports unknown list members, out of line to keep other reads small.
    @usableFromInline
    func auditedValue<Value>(_ key: FlagKey<Value>) -> Value {
        let raw = flagValue(key.name, nameHash: key.nameHash)
        if let audit = key.unknownMembers, let raw {
            let unknown = audit(raw)
            if !unknown.isEmpty { noteUnknownValues(unknown, in: key.name) }
        }
        guard let raw, let typed = key.value(from: raw) else { return key.defaultValue }
        return typed
    }

    /// The value plus variant, reason, error code, source, snapshot version and age.
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
    /// The typed details for `key`: its default where there is no value, TYPE_MISMATCH if unconvertible.
    @inlinable
    public consuming func typed<Typed>(for key: FlagKey<Typed>) -> FlagDetails<Typed> {
        guard let raw = value else {
            return FlagDetails<Typed>(
                key: self.key, value: key.defaultValue, extras: extras, reason: reason, errorCode: errorCode,
                errorMessage: errorMessage, source: source, snapshotVersion: snapshotVersion, age: age)
        }
        guard let typed = key.value(from: raw) else {
            // The default is served: no variant or metadata of the value that was not (OpenFeature's hooks expect none).
            return FlagDetails<Typed>(
                key: self.key, value: key.defaultValue, extras: nil, reason: .error, errorCode: .typeMismatch,
                errorMessage: "expected \(Typed.self), found \(raw.typeName)", source: .codeDefault, snapshotVersion: snapshotVersion,
                age: age)
        }
        return FlagDetails<Typed>(
            key: self.key, value: typed, extras: extras, reason: reason, errorCode: errorCode, errorMessage: errorMessage,
            source: source, snapshotVersion: snapshotVersion, age: age)
    }
}
