import FeatureFlags
import Foundation

/// The `flagctl` command-line tool: `demo`, `eval`, `serve`, `lint`.
public enum FlagCtl {
    /// The tool's version.
    public static let version = "0.2.0"

    /// Exit status for a command line that cannot be run (BSD `EX_USAGE`).
    public static let usageExit: Int32 = 64

    static let usage = """
        flagctl \(version) — feature flags that keep working offline

        USAGE: flagctl <command> [options]

        COMMANDS:
          demo    play the demo script against a loopback flag server
          eval    evaluate every flag for a context against an endpoint, with fallback
          serve   run a loopback flag server on a flag document, logging each request
          lint    check a flag document against a schema; bump its version

        Run flagctl <command> --help for a command's options.
        """

    /// Runs `arguments` (without the program name) and returns the exit status.
    public static func run(_ arguments: [String], console: Console = .standard, signals: StopSignal = .interrupt) async -> Int32 {
        guard let command = arguments.first else {
            console.out(usage)
            return 0
        }
        let rest = Array(arguments.dropFirst())
        switch command {
        case "-h", "--help", "help":
            console.out(usage)
            return 0
        case "--version", "version":
            console.out(version)
            return 0
        case "demo":
            return await execute(DemoCommand.spec, rest, console) { try await DemoCommand.run($0, console: console) }
        case "eval":
            return await execute(EvalCommand.spec, rest, console) { try await EvalCommand.run($0, console: console) }
        case "serve":
            return await execute(ServeCommand.spec, rest, console) { try await ServeCommand.run($0, console: console, stop: signals) }
        case "lint":
            return await execute(LintCommand.spec, rest, console) { try LintCommand.run($0, console: console) }
        default:
            let known = ["demo", "eval", "serve", "lint"]
            let hint = ArgumentParser.suggestion(for: command, among: known).map { " (did you mean \($0)?)" } ?? ""
            console.err("flagctl: unknown command '\(command)'\(hint)")
            console.err(usage)
            return usageExit
        }
    }

    /// Parses, answers `--help`, and turns usage errors into one line plus usage.
    private static func execute(
        _ spec: CommandSpec, _ arguments: [String], _ console: Console, _ body: (ParsedArguments) async throws -> Int32
    ) async -> Int32 {
        do {
            let parsed = try ArgumentParser.parse(arguments, spec)
            if parsed.wantsHelp {
                console.out(spec.help)
                return 0
            }
            return try await body(parsed)
        } catch let error as UsageError {
            console.err("flagctl \(spec.name): \(error.message)")
            console.err("usage: \(spec.usageLine)")
            return usageExit
        } catch {
            console.err("flagctl \(spec.name): \(error)")
            return 1
        }
    }
}

/// How `serve` learns it should stop: Ctrl-C in the tool, a call in tests.
///
/// ``arm`` runs before the server announces itself — so a Ctrl-C that comes right after the
/// banner is already caught — and returns the wait.
public struct StopSignal: Sendable {
    /// Starts listening; the returned closure returns when the command should stop.
    public let arm: @Sendable () -> @Sendable () async -> Void

    /// A stop signal from an arming function.
    public init(arm: @escaping @Sendable () -> @Sendable () async -> Void) { self.arm = arm }

    /// A stop signal that needs no arming: `wait` returns when the command should stop.
    public init(wait: @escaping @Sendable () async -> Void) { self.arm = { wait } }

    /// SIGINT (Ctrl-C) or SIGTERM.
    public static let interrupt = StopSignal(arm: {
        let fired = OneShot()
        let queue = DispatchQueue(label: "flagctl.signals")
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { fired.fire() }
            source.resume()
            sources.append(source)
        }
        SignalSources.keep(sources)
        return { await fired.wait() }
    })
}

/// Fires once; waiting after it fired returns at once.
final class OneShot: Sendable {
    private let state = Locked<(fired: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func fire() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.fired = true
            defer { s.waiters.removeAll() }
            return s.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let fired = state.withLock { s -> Bool in
                if !s.fired { s.waiters.append(continuation) }
                return s.fired
            }
            if fired { continuation.resume() }
        }
    }
}

/// Holds signal sources so they are not released while the command runs.
private enum SignalSources {
    private static let held = Locked<[any DispatchSourceSignal]>([])
    static func keep(_ sources: [any DispatchSourceSignal]) { held.withLock { $0 += sources } }
}
