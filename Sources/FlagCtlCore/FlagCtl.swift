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
          demo    play seed 000's demo script against a loopback flag server
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
public struct StopSignal: Sendable {
    /// Returns when the command should stop.
    public let wait: @Sendable () async -> Void

    /// A stop signal.
    public init(wait: @escaping @Sendable () async -> Void) { self.wait = wait }

    /// SIGINT (Ctrl-C) or SIGTERM.
    public static let interrupt = StopSignal {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let queue = DispatchQueue(label: "flagctl.signals")
            let fired = Locked(false)
            var sources: [any DispatchSourceSignal] = []
            for number in [SIGINT, SIGTERM] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
                source.setEventHandler {
                    let first = fired.withLock { f -> Bool in
                        defer { f = true }
                        return !f
                    }
                    if first { continuation.resume() }
                }
                source.resume()
                sources.append(source)
            }
            // Keep the sources alive for the life of the process.
            SignalSources.keep(sources)
        }
    }
}

/// Holds signal sources so they are not released while the command runs.
private enum SignalSources {
    private static let held = Locked<[any DispatchSourceSignal]>([])
    static func keep(_ sources: [any DispatchSourceSignal]) { held.withLock { $0 += sources } }
}
