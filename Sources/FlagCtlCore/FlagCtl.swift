import FeatureFlags
import Foundation

/// The `flagctl` command-line tool: `demo`, `eval`, `serve`, `lint`.
public enum FlagCtl {
    /// The package's version, as `CHANGELOG.md` names it (`flagctl --version` prints it).
    public static let version = "0.6.0"

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
          watch   print every flag change as a change stream brings it, with its latency
          launch  rehearse one launch of an app with the crash-loop guard
          read    print what a fallback file serves, offline, as an app extension reads it
          keygen  make an Ed25519 key pair for signing flag documents
          sign    sign a flag document (JSON, flagd rules) as a compact JWS
          verify  check a signed flag document against a public key

        Run flagctl <command> --help for a command's options.
        """

    /// The tool's entry point: runs the process's arguments and exits with the command's
    /// status. SIGPIPE is ignored so that a closed output pipe ends the command quietly
    /// (``Console/standard``); temporary directories left by any path are removed.
    public static func main() async -> Never {
        signal(SIGPIPE, SIG_IGN)
        let status = await run(Array(CommandLine.arguments.dropFirst()))
        TemporaryDirectories.removeAll()
        exit(Console.standard.isOutputClosed ? Console.closedOutputExit : status)
    }

    /// Runs `arguments` (without the program name) and returns the exit status. `environment`
    /// holds the variables commands read (`OFREP_ENDPOINT`, `OFREP_HEADERS`,
    /// `OFREP_TIMEOUT_MS` for `--provider ofrep`); nil, the process's.
    public static func run(
        _ arguments: [String], console: Console = .standard, signals: StopSignal = .interrupt, environment: [String: String]? = nil
    ) async -> Int32 {
        let environment = environment ?? ProcessInfo.processInfo.environment
        guard let command = arguments.first else {
            // No command is a usage error (EX_USAGE), as with any other missing argument.
            console.err(usage)
            return usageExit
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
            return await execute(environment, DemoCommand.spec, rest, console) { try await DemoCommand.run($0, console: console) }
        case "eval":
            return await execute(environment, EvalCommand.spec, rest, console) { try await EvalCommand.run($0, console: console) }
        case "serve":
            return await execute(environment, ServeCommand.spec, rest, console) { try await ServeCommand.run($0, console: console, stop: signals) }
        case "lint":
            return await execute(environment, LintCommand.spec, rest, console) { try LintCommand.run($0, console: console) }
        case "watch":
            return await execute(environment, WatchCommand.spec, rest, console) { try await WatchCommand.run($0, console: console, stop: signals) }
        case "launch":
            return await execute(environment, LaunchCommand.spec, rest, console) { try await LaunchCommand.run($0, console: console) }
        case "read":
            return await execute(environment, ReadCommand.spec, rest, console) { try ReadCommand.run($0, console: console) }
        case "keygen":
            return await execute(environment, SigningCommands.keygen, rest, console) { try SigningCommands.runKeygen($0, console: console) }
        case "sign":
            return await execute(environment, SigningCommands.sign, rest, console) { try SigningCommands.runSign($0, console: console) }
        case "verify":
            return await execute(environment, SigningCommands.verify, rest, console) { try SigningCommands.runVerify($0, console: console) }
        default:
            let known = ["demo", "eval", "serve", "lint", "watch", "launch", "read", "keygen", "sign", "verify"]
            let hint = ArgumentParser.suggestion(for: command, among: known).map { " (did you mean \($0)?)" } ?? ""
            console.err("flagctl: unknown command '\(command)'\(hint)")
            console.err(usage)
            return usageExit
        }
    }

    /// Parses, answers `--help`, and turns usage errors into one line plus usage.
    private static func execute(
        _ environment: [String: String], _ spec: CommandSpec, _ arguments: [String], _ console: Console,
        _ body: (ParsedArguments) async throws -> Int32
    ) async -> Int32 {
        do {
            var parsed = try ArgumentParser.parse(arguments, spec)
            parsed.environment = environment
            if parsed.wantsHelp {
                console.out(spec.help)
                return 0
            }
            return try await body(parsed)
        } catch let error as UsageError {
            console.err("flagctl \(spec.name): \(Formatting.printable(error.message))")
            console.err("usage: \(spec.usageLine)")
            return usageExit
        } catch {
            console.err("flagctl \(spec.name): \(Formatting.printable(String(describing: error)))")
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

    /// SIGINT (Ctrl-C) or SIGTERM. The handler is installed synchronously when armed, so a
    /// signal that comes right after the banner is never lost.
    public static let interrupt = StopSignal(arm: {
        let fired = OneShot()
        Interrupts.arm { fired.fire() }
        return { await fired.wait() }
    })
}

/// SIGINT and SIGTERM, caught by a handler that `signal()` installs at once (a dispatch signal
/// source is armed asynchronously on Linux: a signal in between would be lost). The handler
/// only writes a byte to a pipe — async-signal-safe — and a thread reading the pipe tells the
/// listeners.
enum Interrupts {
    private static let listeners = Locked<[@Sendable () -> Void]>([])
    private static let installed = Locked(false)

    /// Tells every listener, as a signal would: the output pipe closed.
    static func notify() {
        for listener in listeners.withLock({ $0 }) { listener() }
    }

    /// Calls `listener` at every SIGINT or SIGTERM from now on.
    static func arm(_ listener: @escaping @Sendable () -> Void) {
        listeners.withLock { $0.append(listener) }
        let first = installed.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        guard first else { return }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            // No pipe: keep the default action, so Ctrl-C still ends the process.
            return
        }
        interruptWriteDescriptor = fds[1]
        signal(SIGINT, onInterrupt)
        signal(SIGTERM, onInterrupt)
        let readEnd = fds[0]
        Thread {
            var byte: UInt8 = 0
            while true {
                let n = read(readEnd, &byte, 1)
                if n == 1 {
                    for listener in listeners.withLock({ $0 }) { listener() }
                } else if n < 0, errno == EINTR {
                    continue
                } else {
                    return
                }
            }
        }.start()
    }
}

/// The pipe the signal handler writes to. Set once, before the handler is installed, and only
/// read afterwards (by the handler): no two threads ever write it.
nonisolated(unsafe) private var interruptWriteDescriptor: Int32 = -1

/// The signal handler: one byte into the pipe (`write` is async-signal-safe).
private func onInterrupt(_ number: Int32) {
    var byte = UInt8(truncatingIfNeeded: number)
    _ = write(interruptWriteDescriptor, &byte, 1)
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
