import ChildProcesses
import FlagServer
import Foundation
import Testing
import TestSupport

/// Children started with `posix_spawn`: status, signals, environment, pipes and descriptors.
@Suite("Child processes")
struct ChildProcessTests {
    static let shell = URL(fileURLWithPath: "/bin/sh")

    static func text(_ handle: FileHandle?) -> String {
        String(decoding: handle?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
    }

    @Test func aChildsStatusOutputAndErrorsComeBack() async throws {
        let child = try ChildProcess(Self.shell, ["-c", "echo out; echo err >&2; exit 3"])
        #expect(await child.wait() == .init(status: 3, bySignal: false))
        #expect(!child.isRunning && child.termination?.succeeded == false)
        #expect(Self.text(child.output) == "out\n" && Self.text(child.errors) == "err\n")
    }

    @Test func aChildEndedBySignalSaysWhichSignal() async throws {
        let child = try ChildProcess(Self.shell, ["-c", "kill -9 $$"], output: .discard, errors: .discard)
        #expect(await child.wait() == .init(status: 9, bySignal: true))
        #expect(child.output == nil && child.errors == nil)
        // Its end has been seen: a signal now goes nowhere (the identifier may be another's).
        child.send(SIGKILL)
    }

    @Test func theEnvironmentIsThisProcesssWithTheAdditions() async throws {
        let child = try ChildProcess(Self.shell, ["-c", "echo \"$CHILD_PROBE:$PATH\""], environment: ["CHILD_PROBE": "yes"])
        #expect(await child.wait().succeeded)
        #expect(Self.text(child.output) == "yes:\(ProcessInfo.processInfo.environment["PATH"] ?? "")\n")
    }

    @Test func anExecutableThatIsNotThereIsAStartErrorNamingIt() {
        #expect {
            try ChildProcess(URL(fileURLWithPath: "/nonexistent/flag-tool"), [])
        } throws: { error in
            "\(error)".hasPrefix("cannot start flag-tool: posix_spawn: ")
        }
    }

    @Test func theChildHoldsOnlyItsThreeStandardDescriptors() async throws {
        // Descriptors this process holds open (a listening server among them) stay here.
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let child = try ChildProcess(Self.shell, ["-c", "exec ls /proc/self/fd"])
        #expect(await child.wait().succeeded)
        let listed = Self.text(child.output).split(separator: "\n").compactMap { Int($0) }
        // 0, 1 and 2, and the one `ls` reads the directory with.
        #expect(listed.count == 4 && listed.allSatisfy { $0 <= 3 }, "\(listed)")
    }

    @Test func aChildOutlivingItsTimeoutIsEnded() async throws {
        let outcome = try await ChildProcess.run(Self.shell, ["-c", "echo started; exec sleep 60"], timeout: .milliseconds(200))
        #expect(outcome.timedOut && outcome.crashed && outcome.status == SIGTERM)
        #expect(String(decoding: outcome.stdout, as: UTF8.self) == "started\n")
    }

    @Test func manyChildrenStartedAtOnceAllRunAndNoneHoldsAnothersPipe() async throws {
        // Each reads its own output to the end: a pipe inherited by a sibling would keep that read
        // waiting for the sibling's `sleep`.
        let outputs = try await withThrowingTaskGroup(of: String.self) { group in
            for n in 0..<40 {
                group.addTask {
                    try await blocking {
                        let child = try ChildProcess(Self.shell, ["-c", "echo \(n); exec sleep 0.\(n % 3)"])
                        let text = Self.text(child.output)
                        _ = child.waitUntilExit()
                        return text
                    }
                }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(Set(outputs) == Set((0..<40).map { "\($0)\n" }))
    }
}
