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
        let child = try ChildProcess(Self.shell, ["-c", "exec ls /dev/fd/"])
        #expect(await child.wait().succeeded)
        let listed = Self.text(child.output).split(separator: "\n").compactMap { Int($0) }
        // 0, 1 and 2, and the one `ls` reads the directory with.
        #expect(listed.count == 4 && listed.allSatisfy { $0 <= 3 }, "\(listed)")
    }

    @Test func aChildOutlivingItsTimeoutIsEnded() async throws {
        // The bound is generous so that a loaded machine's shell has printed before it comes.
        let outcome = try await ChildProcess.run(Self.shell, ["-c", "echo started; exec sleep 60"], timeout: TestTiming.scaled(.seconds(2)))
        #expect(outcome.timedOut && outcome.crashed && outcome.status == SIGTERM)
        #expect(String(decoding: outcome.stdout, as: UTF8.self) == "started\n")
    }

    @Test func manyChildrenStartedAtOnceAllRunAndNoneHoldsAnothersPipe() async throws {
        // Each child prints its number and goes on sleeping with its output closed, so its
        // pipe ends at once — unless a sibling inherited it, whose minute of sleep the read
        // would then wait out. Every read ends while every child still sleeps.
        let children = try await withThrowingTaskGroup(of: (ChildProcess, String).self) { group in
            for n in 0..<40 {
                group.addTask {
                    try await blocking {
                        let child = try ChildProcess(Self.shell, ["-c", "echo \(n); exec sleep 60 >/dev/null"])
                        return (child, Self.text(child.output))
                    }
                }
            }
            return try await group.reduce(into: [(ChildProcess, String)]()) { $0.append($1) }
        }
        #expect(Set(children.map(\.1)) == Set((0..<40).map { "\($0)\n" }))
        #expect(children.allSatisfy { $0.0.isRunning })
        for (child, _) in children { child.send(SIGKILL) }
        for (child, _) in children { #expect(await child.wait() == .init(status: SIGKILL, bySignal: true)) }
    }
}
