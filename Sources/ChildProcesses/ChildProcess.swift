import FeatureFlags
package import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process, started with `posix_spawn` — for the tools' launches, the benchmarks'
/// children and the tests that start tools.
///
/// Not Foundation's `Process`: on Linux (swift-corelibs-foundation up to Swift 6.3) its
/// `run()` lists `/proc/self/fd` with a `dirent` copy that reads up to 256 bytes past glibc's
/// buffer, and crashes the parent now and then (swiftlang/swift-corelibs-foundation#5472; our
/// own test run crashed so). Here the child's standard output and error are pipes made
/// close-on-exec, one start at a time — no other child this type starts inherits them, so
/// reading them to their end waits only for this child and its own children — and every other descriptor
/// is closed in the child where the platform can say so in one step
/// (`POSIX_SPAWN_CLOEXEC_DEFAULT` on macOS, `posix_spawn_file_actions_addclosefrom_np` on glibc
/// 2.34 and later; older glibc lets the child inherit descriptors not marked close-on-exec).
/// Like `Process`, the child gets a process group of its own, so a terminal's Ctrl-C reaches
/// only the parent; unlike it, the child starts with no signal blocked or ignored, as from a
/// shell. A thread of its own waits for the child's end.
package final class ChildProcess: Sendable {
    /// Where a child's standard output or error goes.
    package enum Output: Sendable {
        /// A pipe whose read end is ``output`` or ``errors``.
        case pipe
        /// `/dev/null`.
        case discard
    }

    /// How a child ended.
    package struct Termination: Sendable, Equatable {
        /// The exit status, or the signal's number when ``bySignal``; -1 when its end could not be
        /// read (something else in this process reaped it).
        package var status: Int32
        /// Ended by a signal (an abort, a crash, a kill).
        package var bySignal: Bool
        /// An end with `status`, by a signal or not.
        package init(status: Int32, bySignal: Bool) {
            self.status = status
            self.bySignal = bySignal
        }

        /// It exited with status 0.
        package var succeeded: Bool { status == 0 && !bySignal }
    }

    /// The child could not be started.
    package struct StartError: Error, CustomStringConvertible {
        /// What went wrong, naming the executable.
        package let description: String
    }

    /// The child's process identifier.
    private let pid: Int32
    /// The read end of the child's standard output (``Output/pipe``), else nil.
    package let output: FileHandle?
    /// The read end of the child's standard error (``Output/pipe``), else nil.
    package let errors: FileHandle?
    private let ended = DispatchGroup()
    private let ending = Locked<Termination?>(nil)

    /// Starts `executable` with `arguments`, its environment this process's with `environment`
    /// added, standard input `/dev/null`.
    package init(
        _ executable: URL, _ arguments: [String], environment: [String: String] = [:], output: Output = .pipe,
        errors: Output = .pipe
    ) throws(StartError) {
        #if os(Linux) || os(macOS)
        // One start at a time: a pipe is marked close-on-exec just after it is made, and without
        // glibc's closefrom a child started in between would inherit it.
        Self.starting.lock()
        defer { Self.starting.unlock() }
        let name = executable.lastPathComponent
        func failure(_ what: String, _ code: Int32) -> StartError {
            StartError(description: "cannot start \(name): \(what): \(String(cString: strerror(code)))")
        }
        var pipes: [(read: Int32, write: Int32)?] = []
        defer { for pipe in pipes { if let pipe { close(pipe.write) } } }
        for wanted in [output, errors] {
            guard wanted == .pipe else {
                pipes.append(nil)
                continue
            }
            var ends: [Int32] = [-1, -1]
            guard Self.closeOnExecPipe(&ends) == 0 else {
                let code = errno
                for pipe in pipes { if let pipe { close(pipe.read) } }
                throw failure("pipe", code)
            }
            pipes.append((ends[0], ends[1]))
        }

        #if canImport(Darwin)
        var actions: posix_spawn_file_actions_t? = nil
        var attributes: posix_spawnattr_t? = nil
        #else
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        for (target, pipe) in zip([Int32(1), 2], pipes) {
            if let pipe {
                posix_spawn_file_actions_adddup2(&actions, pipe.write, target)
            } else {
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
            }
        }
        // No signal blocked, none ignored: the starting thread's mask (a Dispatch thread blocks
        // almost every signal) and this process's ignored signals are not the child's.
        var signals = sigset_t()
        sigemptyset(&signals)
        posix_spawnattr_setsigmask(&attributes, &signals)
        sigfillset(&signals)
        sigdelset(&signals, SIGKILL)
        sigdelset(&signals, SIGSTOP)
        posix_spawnattr_setsigdefault(&attributes, &signals)
        let flags = Int32(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
        #if canImport(Darwin)
        posix_spawnattr_setflags(&attributes, Int16(flags | Int32(POSIX_SPAWN_CLOEXEC_DEFAULT)))
        #else
        posix_spawnattr_setflags(&attributes, Int16(flags))
        if let closeFrom = Self.closeFrom { _ = closeFrom(&actions, 3) }
        #endif

        let environmentLines = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0.key)=\($0.value)" }
        var argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
        var envp = environmentLines.map { strdup($0) } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        let code = posix_spawn(&pid, executable.path, &actions, &attributes, &argv, &envp)
        guard code == 0 else {
            for pipe in pipes { if let pipe { close(pipe.read) } }
            throw failure("posix_spawn", code)
        }
        self.pid = pid
        self.output = pipes[0].map { FileHandle(fileDescriptor: $0.read, closeOnDealloc: true) }
        self.errors = pipes[1].map { FileHandle(fileDescriptor: $0.read, closeOnDealloc: true) }
        ended.enter()
        let (group, ending, child) = (ended, ending, pid)
        Thread {
            // Waits for the end without reaping it, then reaps it under the lock `send` signals
            // under: until then the identifier is this child's and no other process's.
            var info = siginfo_t()
            while waitid(P_PID, id_t(child), &info, WEXITED | WNOWAIT) < 0, errno == EINTR {}
            ending.withLock { termination in
                var raw: Int32 = 0
                var reaped: pid_t
                repeat { reaped = waitpid(child, &raw, 0) } while reaped < 0 && errno == EINTR
                // The wait status: the low seven bits are the signal that ended it (0: it
                // exited), the next eight the exit status.
                let signal = raw & 0x7f
                termination = reaped != child ? Termination(status: -1, bySignal: false)
                    : Termination(status: signal == 0 ? (raw >> 8) & 0xff : signal, bySignal: signal != 0)
            }
            group.leave()
        }.start()
        #else
        throw StartError(description: "processes cannot be started on this platform")
        #endif
    }

    /// Still running: its end has not been seen.
    package var isRunning: Bool { ending.withLock { $0 == nil } }

    /// How it ended, once it has.
    package var termination: Termination? { ending.withLock { $0 } }

    /// Sends `signal` unless it has ended (its identifier could be another process's by then).
    package func send(_ signal: Int32) {
        ending.withLock { if $0 == nil { kill(pid, signal) } }
    }

    /// Waits for its end without holding a thread.
    package func wait() async -> Termination {
        await withCheckedContinuation { continuation in
            ended.notify(queue: .global()) { continuation.resume() }
        }
        return ending.withLock { $0! }
    }

    /// Waits for its end, blocking the calling thread (never one of Swift's cooperative pool).
    package func waitUntilExit() -> Termination {
        ended.wait()
        return ending.withLock { $0! }
    }

    /// Starts are one at a time (see `init`).
    private static let starting = NSLock()

    /// A pipe whose two ends are close-on-exec (marked at once, while no other child starts).
    private static func closeOnExecPipe(_ ends: inout [Int32]) -> Int32 {
        guard pipe(&ends) == 0 else { return -1 }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return 0
    }

    #if os(Linux)
    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc
    /// module does not declare.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()
    #endif
}
