import Foundation

/// Breaks launch crash loops caused by stored flag values: after ``launchesBeforeSafeMode`` launches in a row never
/// marked healthy (``FeatureFlagProvider/markHealthy()``, or ``healthyAfter`` in the foreground), the next starts in
/// safe mode (``FeatureFlagProvider/safeMode``), serving the last healthy snapshot or the code defaults. Safe mode ends
/// on a fetch with other values or an explicit `markHealthy()` (call it there only on purpose); a kill switch wins.
public struct CrashLoopGuard: Sendable, Equatable {
    /// Consecutive unhealthy launches before the next starts in safe mode; default 2, at least 1.
    public var launchesBeforeSafeMode: Int {
        didSet { launchesBeforeSafeMode = max(1, launchesBeforeSafeMode) }
    }
    /// Marks the launch healthy after this long in the foreground (nil: never by itself); default 30 s.
    public var healthyAfter: Duration?

    /// A guard.
    public init(launchesBeforeSafeMode: Int = 2, healthyAfter: Duration? = .seconds(30)) {
        self.launchesBeforeSafeMode = max(1, launchesBeforeSafeMode)
        self.healthyAfter = healthyAfter
    }

    /// This launch's safe-mode start, if any, and the journal recording it; `lastKnownGood` is what it would serve.
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
        return (next, SafeModeStart(healthy: healthy, crashDigest: crash, reason: reason))
    }
}

/// A launch in safe mode: what to serve and what not to trust (kept in the provider's state until it leaves).
struct SafeModeStart: Sendable {
    /// The snapshot the app was last healthy under, if any.
    let healthy: FlagSnapshot?
    /// The digest of the values the crashes happened under (nil: unknown, any fetch ends safe mode).
    var crashDigest: String?
    /// Why, in one line: how many launches failed and what is served instead.
    let reason: String
}
