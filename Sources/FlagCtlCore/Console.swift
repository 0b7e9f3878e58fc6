import FeatureFlags
import Foundation

/// Where a command writes: standard output and error in the tool, a buffer in tests.
public final class Console: Sendable {
    /// Which stream.
    public enum Stream: Sendable { case out, err }

    private let sink: @Sendable (Stream, String) -> Void

    /// A console writing through `sink`.
    public init(sink: @escaping @Sendable (Stream, String) -> Void) { self.sink = sink }

    /// The process's standard output and error, line-buffered.
    public static let standard = Console { stream, line in
        let data = Data((line + "\n").utf8)
        switch stream {
        case .out: FileHandle.standardOutput.write(data)
        case .err: FileHandle.standardError.write(data)
        }
    }

    /// A console that keeps every line, for tests.
    public static func capturing() -> (Console, CapturedOutput) {
        let captured = CapturedOutput()
        return (Console { stream, line in captured.append(stream, line) }, captured)
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
