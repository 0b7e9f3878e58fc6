import FeatureFlags
@testable import FlagCtlCore
import TestSupport

// flagctl run in this process, shared by the flagctl suites.

/// Runs `flagctl arguments` with a capturing console; `stop` stands for Ctrl-C; `environment`
/// is all the variables the command sees (none by default: the machine's cannot leak in).
func run(_ arguments: [String], stop: StopSignal = StopSignal {}, environment: [String: String] = [:]) async -> (Int32, CapturedOutput) {
    let (console, captured) = Console.capturing()
    let status = await FlagCtl.run(arguments, console: console, signals: stop, environment: environment)
    return (status, captured)
}

/// Starts `flagctl arguments` with a capturing console and returns at once: the output can be
/// read while the command runs (a test acts on what it printed), `status` ends with it.
func start(_ arguments: [String], stop: StopSignal = StopSignal {}) -> (status: Task<Int32, Never>, output: CapturedOutput) {
    let (console, captured) = Console.capturing()
    return (Task { await FlagCtl.run(arguments, console: console, signals: stop, environment: [:]) }, captured)
}

/// The lines that are JSON objects.
func jsonLines(_ lines: [String]) -> [[String: FlagValue]] {
    lines.compactMap { try? FlagJSON.parse($0).objectValue }
}

/// `--timeout` for fetches that are not about time: generous, so that a loaded machine cannot
/// turn a success into a timeout (`flagctl` accepts at most 60 s).
let generousTimeout = ["--timeout", String(min(30 * TestTiming.scale, 60))]
