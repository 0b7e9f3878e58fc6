package import FeatureFlags
package import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process run to its end, for the demo's launches and the tests that start tools.
///
/// Its output is read once it has exited, without waiting for end-of-file: on Linux a pipe
/// can be inherited by another child started at the same moment from another thread, which
/// then holds the pipe open for as long as it lives, so "read to the end" could wait for a
/// stranger. What the child wrote is in the pipe's buffer when it exits (up to 64 KiB; a
/// child that writes more blocks, and is ended at the timeout). Nothing here blocks a thread
/// of Swift's cooperative pool.
package enum ChildProcess {
    /// How a child ended.
    package struct Outcome: Sendable {
        /// The exit status, or the signal's number when ``crashed``.
        package var status: Int32
        /// Ended by a signal (an abort, a crash).
        package var crashed: Bool
        /// Killed because it outlived its timeout.
        package var timedOut: Bool
        package var stdout: Data
        package var stderr: Data

        /// Standard output's lines that are JSON objects.
        package var jsonLines: [[String: FlagValue]] {
            String(decoding: stdout, as: UTF8.self).split(separator: "\n").compactMap { line in
                (try? FlagJSON.parse(Array(line.utf8)))?.objectValue
            }
        }
        /// Standard error as text.
        package var errorText: String { String(decoding: stderr, as: UTF8.self) }
    }

    /// The child could not be started.
    package struct StartError: Error, CustomStringConvertible {
        package let description: String
    }

    /// Runs `executable` with `arguments`; kills it after `timeout`.
    package static func run(_ executable: URL, _ arguments: [String], timeout: Duration) async throws(StartError) -> Outcome {
        #if os(Linux) || os(macOS)
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        let ended = OneShot()
        process.terminationHandler = { _ in ended.fire() }
        do {
            try process.run()
        } catch {
            throw StartError(description: "cannot start \(executable.lastPathComponent): \(error.localizedDescription)")
        }
        let timedOut = Locked(false)
        let killer = Task {
            try await Task.sleep(for: timeout)
            timedOut.withLock { $0 = true }
            process.terminate()
            try await Task.sleep(for: .seconds(2))
            kill(process.processIdentifier, SIGKILL)
            // Should its end never be reported, the wait ends anyway.
            try await Task.sleep(for: .seconds(2))
            ended.fire()
        }
        await ended.wait()
        killer.cancel()
        let over = timedOut.withLock { $0 }
        let running = process.isRunning
        return Outcome(
            status: running ? -1 : process.terminationStatus, crashed: !running && process.terminationReason == .uncaughtSignal,
            timedOut: over, stdout: drain(out.fileHandleForReading.fileDescriptor),
            stderr: drain(err.fileHandleForReading.fileDescriptor))
        #else
        throw StartError(description: "processes cannot be started on this platform")
        #endif
    }

    /// What a pipe holds now, read without blocking.
    private static func drain(_ fd: Int32) -> Data {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var data = Data()
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = read(fd, &chunk, chunk.count)
            if n > 0 {
                data.append(contentsOf: chunk[0..<n])
            } else if n < 0, errno == EINTR {
                continue
            } else {
                return data
            }
        }
    }
}
