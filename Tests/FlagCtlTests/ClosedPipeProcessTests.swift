import ChildProcesses
@testable import FlagCtlCore
import Foundation
import Testing
import TestSupport

/// `flagctl … | head`: the real tool, its output piped into a reader that goes away early.
@Suite(
    "flagctl with a closed output pipe, real processes",
    .disabled(if: TestTiming.underThreadSanitizer, .sanitizedChildren))
struct ClosedPipeProcessTests {
    /// Runs `flagctl arguments | head -n lines` in a shell with `TMPDIR` pointing at `tmp`;
    /// what the shell reports: flagctl's exit status and its standard error.
    static func pipe(_ arguments: String, lines: Int, tmp: TempDir) async throws -> (flagctl: Int32?, err: String) {
        guard let binary = builtProduct("flagctl") else {
            Issue.record("flagctl was not built next to the tests")
            return (nil, "")
        }
        let script = """
            TMPDIR='\(tmp.path)'; export TMPDIR
            { '\(binary.path)' \(arguments) 2>'\(tmp.path)/err'; echo "status $?" >'\(tmp.path)/status'; } | head -n \(lines) >/dev/null
            """
        let ended = try await ChildProcess.run(
            URL(fileURLWithPath: "/bin/sh"), ["-c", script], timeout: TestTiming.scaled(.seconds(60)))
        #expect(!ended.timedOut)
        let status = (try? String(contentsOfFile: tmp.path + "/status", encoding: .utf8))
            .flatMap { Int32($0.dropFirst("status ".count).trimmingCharacters(in: .whitespacesAndNewlines)) }
        let err = (try? String(contentsOfFile: tmp.path + "/err", encoding: .utf8)) ?? "missing"
        try? FileManager.default.removeItem(atPath: tmp.path + "/err")
        try? FileManager.default.removeItem(atPath: tmp.path + "/status")
        return (status, err)
    }

    @Test(arguments: ["demo", "demo --json"])
    func theDemoEndsQuietlyAndRemovesItsTemporaryDirectory(arguments: String) async throws {
        let tmp = TempDir()
        let (status, err) = try await Self.pipe(arguments + " --timeout 30", lines: 3, tmp: tmp)
        #expect(status == Console.closedOutputExit)
        #expect(err.isEmpty, "nothing on standard error: \(err)")
        #expect(tmp.files().isEmpty, "left behind: \(tmp.files())")
    }

    @Test func aCommandWithNothingToCleanEndsAtOnce() async throws {
        let tmp = TempDir()
        let (status, err) = try await Self.pipe("--help", lines: 1, tmp: tmp)
        // The help fits the pipe's buffer: it may end before head closes the pipe.
        #expect(status == 0 || status == Console.closedOutputExit)
        #expect(err.isEmpty)
    }
}
