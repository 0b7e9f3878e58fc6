import Foundation

/// The answer to "the new version crashes at launch": a launch that reads a flag from the
/// Last-Known-Good and crashes before the first fetch lands crashes again on every launch —
/// unless the provider notices the loop. With a guard configured
/// (``FeatureFlagProvider/Configuration/crashLoopGuard``), each launch is recorded beside the
/// Last-Known-Good file, and a launch counts as healthy once the app calls
/// ``FeatureFlagProvider/markHealthy()`` (or after ``healthyAfter`` in the foreground). After
/// ``launchesBeforeSafeMode`` launches in a row that never became healthy, the next one starts
/// — synchronously, before the first read — in **safe mode**: it serves the snapshot the app
/// was last healthy under, or the code defaults when there is none, and says so
/// (``FeatureFlagProvider/safeMode``, a ``FlagEvent/Kind/safeModeEntered`` event).
///
/// Safe mode ends when a fetch brings values other than those the crashes happened under
/// (the operator fixed or killed the feature), or when the app calls
/// ``FeatureFlagProvider/markHealthy()`` — which, in safe mode, means "serve the stored values
/// again", so call it there only on purpose. The automatic mark never ends safe mode. A kill
/// switch wins over everything, safe mode included.
public struct CrashLoopGuard: Sendable, Equatable {
    /// Consecutive launches that never became healthy before the next starts in safe mode.
    /// Default 2; at least 1.
    public var launchesBeforeSafeMode: Int {
        didSet { launchesBeforeSafeMode = max(1, launchesBeforeSafeMode) }
    }
    /// Mark the launch healthy by itself after this long in the foreground without a break
    /// (nil: only ``FeatureFlagProvider/markHealthy()`` does). Default 30 s.
    public var healthyAfter: Duration?

    /// A guard.
    public init(launchesBeforeSafeMode: Int = 2, healthyAfter: Duration? = .seconds(30)) {
        self.launchesBeforeSafeMode = max(1, launchesBeforeSafeMode)
        self.healthyAfter = healthyAfter
    }

    /// What this launch is, given the journal, and the journal with this launch recorded.
    /// `lastKnownGood` is what the launch would serve for `fingerprint` without the guard.
    func launch(
        _ journal: LaunchJournal, fingerprint: String, lastKnownGood: FlagSnapshot?
    ) -> (journal: LaunchJournal, safe: SafeModeStart?) {
        var next = journal
        let previous = journal.unhealthyLaunches
        next.unhealthyLaunches = previous + 1
        guard previous >= launchesBeforeSafeMode else {
            next.crashDigest = lastKnownGood.map(LaunchJournal.digest)
            return (next, nil)
        }
        let healthy = journal.healthy[fingerprint]
        let crash = journal.crashDigest ?? lastKnownGood.map(LaunchJournal.digest)
        let serving = healthy.map { "the values of the last healthy launch (version \($0.version ?? "-"))" } ?? "the code defaults"
        let reason = "\(previous) launches in a row ended before the app was marked healthy; serving \(serving)"
        return (next, SafeModeStart(healthy: healthy, crashDigest: crash, info: SafeMode(reason: reason, unhealthyLaunches: previous)))
    }
}

/// Why the provider is in safe mode (see ``CrashLoopGuard``).
struct SafeMode: Sendable, Equatable {
    /// One line: how many launches failed and what is served instead.
    let reason: String
    /// The launches in a row that never became healthy before this one.
    let unhealthyLaunches: Int
}

/// A launch that starts in safe mode: what to serve and what not to trust.
struct SafeModeStart: Sendable {
    /// The snapshot the app was last healthy under, if any.
    let healthy: FlagSnapshot?
    /// The digest of the values the crashes happened under.
    let crashDigest: String?
    let info: SafeMode
}
