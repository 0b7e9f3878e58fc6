package import FeatureFlags
package import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension ChildProcess {
    /// How a child run to its end ended, and what it wrote.
    package struct Outcome: Sendable {
        /// The exit status, or the signal's number when ``crashed``.
        package var status: Int32
        /// Ended by a signal (an abort, a crash).
        package var crashed: Bool
        /// Killed because it outlived its timeout.
        package var timedOut: Bool
        /// What it wrote to standard output.
        package var stdout: Data
        /// What it wrote to standard error.
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

    /// Runs `executable` with `arguments` to its end; ends it after `timeout` (SIGTERM, then
    /// SIGKILL two seconds later).
    ///
    /// Its output is read once it has exited, without waiting for end-of-file: a child of the
    /// child could hold the pipes open for as long as it lives. What the child wrote is in the
    /// pipes' buffers when it exits (up to 64 KiB each; a child that writes more blocks, and
    /// is ended at the timeout). Nothing here blocks a thread of Swift's cooperative pool.
    package static func run(_ executable: URL, _ arguments: [String], timeout: Duration) async throws(StartError) -> Outcome {
        let child = try ChildProcess(executable, arguments)
        let timedOut = Locked(false)
        // Dispatch's timer, not a task's sleep: a task waits for a thread of Swift's cooperative
        // pool, which CPU-bound work can hold far past the timeout.
        let (seconds, attoseconds) = timeout.components
        let delay = DispatchTimeInterval.nanoseconds(Int(clamping: seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
        DispatchQueue.global().asyncAfter(deadline: .now() + delay) {
            guard child.isRunning else { return }
            timedOut.withLock { $0 = true }
            child.send(SIGTERM)
            DispatchQueue.global().asyncAfter(deadline: .now() + 2) { child.send(SIGKILL) }
        }
        let end = await child.wait()
        return Outcome(
            status: end.status, crashed: end.bySignal, timedOut: timedOut.withLock { $0 },
            stdout: drain(child.output), stderr: drain(child.errors))
    }

    /// What a pipe holds now, read without blocking.
    private static func drain(_ handle: FileHandle?) -> Data {
        guard let fd = handle?.fileDescriptor else { return Data() }
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
