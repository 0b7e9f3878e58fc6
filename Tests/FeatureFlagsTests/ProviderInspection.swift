@testable import FeatureFlags

/// What the tests ask a running provider that an app never needs: read from its state.
extension FeatureFlagProvider {
    /// Consecutive failed fetches.
    var consecutiveFailures: Int { cell.inspect { $0.failures } }
    /// Whether ``run()`` is running now.
    var isRunning: Bool { cell.inspect { $0.running } }
    /// Whether the provider has taken in that the app is in the foreground.
    var isInForeground: Bool { cell.inspect { $0.streams.foreground } }
    /// Whether the run loop sleeps with no poll scheduled (no path, or in the background),
    /// having handled whatever woke it last: nothing but a wake-up will make it fetch.
    var isWaitingForWakeUpOnly: Bool { cell.inspect { $0.waitsForWakeUpOnly && $0.runLoopSleep.sleeper != nil } }
    /// How many payloads the schema checked.
    var validationCount: Int { cell.inspect { $0.validations } }
}

extension ServedState {
    /// What an untyped read of `name` gets (the hash computed here).
    func lookup(_ name: String, killSwitchKey: String) -> FlagValue? {
        lookup(name, hash: FlagNameHash.of(name), killSwitchKey: killSwitchKey)
    }
}

extension ReadPublication {
    /// The object published now (retained).
    var object: Object { read { $0 } }
}

extension ProviderState {
    /// The run loop's last plan had no poll deadline (read after a plan: before the first, none is planned either).
    var waitsForWakeUpOnly: Bool { plannedPoll == nil }
}
