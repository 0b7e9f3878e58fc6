import Foundation

/// Explained reads, answered through the view's reference to avoid copying the state.
extension ServedView {
    /// The untyped read with its explanation (see ``FeatureFlagClient/flagDetails(_:nameHash:)``).
    package func rawDetails(_ name: String, hash: Int, base: ServingBase, now: Date) -> FlagDetails<FlagValue?> {
        explain(name, hash: hash, default: nil, base: base, now: now) { .some($0) }
    }

    /// The read of `key` with its explanation, specialised for the commonest flag types (each
    /// specialisation costs about 2 KB of every app; other types take the generic path).
    @_specialize(exported: false, where Value == Bool)
    @_specialize(exported: false, where Value == String)
    @_specialize(exported: false, where Value == Int)
    package func details<Value>(_ key: FlagKey<Value>, base: ServingBase, now: Date) -> FlagDetails<Value> {
        // The key's fields are taken out first: a closure that reads `key` copies all of it.
        let name = key.name
        let hash = key.nameHash
        let fallback = key.defaultValue
        return key.conversions.with { conversions in
            explain(name, hash: hash, default: fallback, base: base, now: now, convert: conversions.convert)
        }
    }

    /// A read with its explanation; `convert` returning nil means TYPE_MISMATCH.
    @inline(__always)
    func explain<Value>(
        _ name: String, hash: Int, default defaultValue: Value, base: ServingBase, now: Date, convert: (FlagValue) -> Value?
    ) -> FlagDetails<Value> {
        // Fields are read in place: local copies would retain their references on every call.
        let version = served.prepared.snapshot.version
        let age = served.source == .codeDefault ? nil : served.prepared.snapshot.age(at: now)
        if served.prepared.killed || served.held, name != base.killSwitchKey {
            return FlagDetails(key: name, value: defaultValue, reason: .disabled, source: .killSwitch, snapshotVersion: version, age: age)
        }
        if served.held, name == base.killSwitchKey, let on = convert(.bool(true)) {
            return FlagDetails(key: name, value: on, reason: .disabled, source: .killSwitch, snapshotVersion: version, age: age)
        }
        if let overrides = served.overrides, let forced = overrides.value(name, hash: hash) {
            guard let typed = convert(forced) else {
                return FlagDetails(
                    key: name, value: defaultValue, reason: .error, errorCode: .typeMismatch,
                    errorMessage: "override: expected \(Value.self), found \(forced.typeName)", source: .codeDefault)
            }
            return FlagDetails(key: name, value: typed, reason: .static, source: .override)
        }
        guard let slot = served.prepared.table.slot(name, hash: hash) else {
            if let off = served.missingValue() {
                guard let typed = convert(off) else {
                    return FlagDetails(
                        key: name, value: defaultValue, reason: .disabled, source: .codeDefault, snapshotVersion: version, age: age)
                }
                return FlagDetails(key: name, value: typed, reason: .disabled, source: served.source, snapshotVersion: version, age: age)
            }
            // OpenFeature 2.2.7: a provider not ready, or in FATAL, says so rather than "not found".
            let code: FlagErrorCode =
                switch served.status {
                case .notReady: .providerNotReady
                case .fatal: .providerFatal
                default: .flagNotFound
                }
            return FlagDetails(
                key: name, value: defaultValue, reason: .error, errorCode: code, errorMessage: "no flag named \"\(name)\"",
                source: .codeDefault, snapshotVersion: version)
        }
        let fromSnapshot = slot.pointee.fromSnapshot
        let layerSource = fromSnapshot ? served.source : .bundledDefaults
        let layerVersion = fromSnapshot ? version : nil
        let layerAge = fromSnapshot ? age : nil
        guard let raw = slot.pointee.value else {
            let errorCode = slot.pointee.errorCode
            return FlagDetails(
                key: name, value: defaultValue, extras: slot.pointee.extras, reason: slot.pointee.reason ?? .default,
                errorCode: errorCode, errorMessage: errorCode.map { "service reported \($0.rawValue)" }, source: .codeDefault,
                snapshotVersion: layerVersion, age: layerAge)
        }
        guard let typed = convert(raw) else {
            // The default is served: no variant or metadata of the value that was not (OpenFeature's hooks expect none).
            return FlagDetails(
                key: name, value: defaultValue, reason: .error, errorCode: .typeMismatch,
                errorMessage: "expected \(Value.self), found \(raw.typeName)", source: .codeDefault, snapshotVersion: layerVersion,
                age: layerAge)
        }
        let reason: FlagReason
        if !fromSnapshot {
            reason = .static
        } else if let reasonOverride = served.reasonOverride {
            reason = reasonOverride
        } else {
            reason = slot.pointee.reason ?? (layerSource == .override ? .static : .unknown)
        }
        return FlagDetails(
            key: name, value: typed, extras: slot.pointee.extras, reason: reason, source: layerSource,
            snapshotVersion: layerVersion, age: layerAge)
    }
}
