import FeatureFlags
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where a command writes: standard output and error in the tool, a buffer in tests.
public final class Console: Sendable {
    /// Which stream.
    public enum Stream: Sendable { case out, err }

    private let sink: @Sendable (Stream, String) -> Void
    private let closed: @Sendable () -> Bool

    /// A console writing through `sink`; `closed` says whether standard output's reader has gone.
    public init(sink: @escaping @Sendable (Stream, String) -> Void, closed: @escaping @Sendable () -> Bool = { false }) {
        self.sink = sink
        self.closed = closed
    }

    /// Whether nobody reads standard output any more (a closed pipe): a command that runs on
    /// stops, removes what it made and ends with ``closedOutputExit``.
    public var isOutputClosed: Bool { closed() }

    /// The process's standard output and error, a line per write. When standard output is a
    /// pipe its reader closed (`flagctl demo | head`), the command ends quietly: a command
    /// with temporary directories is told to stop (``isOutputClosed``, and as by Ctrl-C) and
    /// removes them; any other ends at once. The status is 141 (128 + SIGPIPE), as for a tool
    /// killed by SIGPIPE, and nothing is printed. ``FlagCtl/main()`` ignores SIGPIPE so that
    /// the closed pipe reaches this code as `EPIPE`.
    public static let standard = Console(
        sink: { stream, line in
            guard stream == .err || !standardOutputClosed.withLock({ $0 }) else { return }
            let written = writeAll(Array((line + "\n").utf8), to: stream == .out ? STDOUT_FILENO : STDERR_FILENO)
            guard !written, stream == .out else { return }
            standardOutputClosed.withLock { $0 = true }
            if TemporaryDirectories.isEmpty { exit(closedOutputExit) }
            Interrupts.notify()
        },
        closed: { standardOutputClosed.withLock { $0 } })

    /// Whether standard output's reader has gone.
    static let standardOutputClosed = Locked(false)

    /// The exit status after standard output's reader went away: 128 + SIGPIPE.
    public static let closedOutputExit: Int32 = 141

    /// Writes `bytes` to `descriptor`; false when the reader has gone (`EPIPE`). Other write
    /// errors drop the line: there is nowhere left to report them.
    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBufferPointer { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return write(descriptor, base + offset, buffer.count - offset)
            }
            if written > 0 {
                offset += written
            } else if written < 0, errno == EINTR {
                continue
            } else {
                return !(written < 0 && errno == EPIPE)
            }
        }
        return true
    }

    /// A console that keeps every line, for tests.
    public static func capturing() -> (Console, CapturedOutput) {
        let captured = CapturedOutput()
        return (Console { stream, line in captured.append(stream, line) }, captured)
    }

    /// A console that keeps lines until `lines` lines reached standard output, then acts as a
    /// closed pipe: later lines are dropped and ``isOutputClosed`` is true. For tests.
    public static func capturing(closingAfter lines: Int) -> (Console, CapturedOutput) {
        let captured = CapturedOutput()
        let console = Console(
            sink: { stream, line in
                if stream == .out, captured.out.count >= lines { return }
                captured.append(stream, line)
            },
            closed: { captured.out.count >= lines })
        return (console, captured)
    }

    /// Writes a line to standard output.
    public func out(_ line: String) { sink(.out, line) }
    /// Writes a line to standard error.
    public func err(_ line: String) { sink(.err, line) }
}

/// Lines a capturing ``Console`` received.
public final class CapturedOutput: Sendable {
    private let lines = Locked<[(Console.Stream, String)]>([])

    func append(_ stream: Console.Stream, _ line: String) { lines.withLock { $0.append((stream, line)) } }

    /// Standard output lines.
    public var out: [String] { lines.withLock { $0.filter { $0.0 == .out }.map(\.1) } }
    /// Standard error lines.
    public var err: [String] { lines.withLock { $0.filter { $0.0 == .err }.map(\.1) } }
}
