import ChildProcesses
import Foundation
import Testing
import TestSupport
@testable import FeatureFlags

/// The fallback file under real processes: writers killed with SIGKILL at random moments,
/// and two writers (an app and its extension) racing on one file.
extension WallClockSensitive {
@Suite("Crash safety and contention of the fallback file")
struct CrashSafetyTests {
    /// The `flag-stress` writer built beside the tests.
    private func writer() -> URL? { builtProduct("flag-stress") }

    /// Starts a writer; returns the process and a reader of its "saved …" lines.
    private func start(_ binary: URL, _ arguments: [String]) throws -> (ChildProcess, FileHandle) {
        let process = try ChildProcess(binary, arguments, errors: .discard)
        return (process, process.output!)
    }

    @Test func sigkillAtRandomMomentsLeavesThePreviousOrTheNewSnapshot() async throws {
        guard let binary = writer() else {
            Issue.record("flag-stress was not built next to the tests")
            return
        }
        let dir = TempDir()
        let file = dir.url("flags.lkg")
        let context = EvaluationContext(targetingKey: "A")
        var generator = SplitMix(seed: 2026)
        var lastKnown: String?  // what the file must hold at least, after the previous trial
        var outcomes = (previous: 0, new: 0, killedBeforeAnySave: 0, midWrite: 0)
        let trials = 200
        for trial in 1...trials {
            let wait = Int.random(in: 0...4, using: &generator)
            let extraMicros = UInt32.random(in: 0...3_000, using: &generator)
            let (process, output) = try start(binary, ["write", file.path, "--context", "A", "--prefix", "t\(trial)", "--flags", "300"])
            // Let it complete `wait` saves (read from its output), then a random extra moment.
            let printed = try await blocking { () -> [String] in
                var lines: [String] = []
                var buffer = ""
                while lines.count < wait {
                    let data = output.availableData
                    if data.isEmpty { break }
                    buffer += String(decoding: data, as: UTF8.self)
                    while let newline = buffer.firstIndex(of: "\n") {
                        lines.append(String(buffer[..<newline]))
                        buffer = String(buffer[buffer.index(after: newline)...])
                    }
                }
                usleep(extraMicros)
                process.send(SIGKILL)
                // Lines that arrived before the kill count too.
                let rest = String(decoding: output.readDataToEndOfFile(), as: UTF8.self)
                _ = process.waitUntilExit()
                return lines + (buffer + rest).split(separator: "\n").map(String.init)
            }
            #expect(process.termination?.bySignal == true)
            let saved = printed.filter { $0.hasPrefix("saved ") }.map { String($0.dropFirst(6)) }
            let confirmed = saved.last ?? lastKnown
            let next = "t\(trial)-\(saved.count + 1)"
            let client = FallbackClient(fileURL: file, context: context)
            let version = client.store.lastKnownGood(for: context)?.snapshot.version
            switch client.store.loadOutcome {
            case .loaded:
                break
            case .noFile where confirmed == nil:
                break
            default:
                Issue.record("trial \(trial): the file did not load: \(client.store.loadOutcome)")
            }
            if version == confirmed, version != nil || confirmed == nil {
                outcomes.previous += 1
            } else if version == next {
                outcomes.new += 1
            } else {
                Issue.record("trial \(trial): found \(version ?? "nothing"), expected \(confirmed ?? "nothing") or \(next)")
            }
            if saved.isEmpty { outcomes.killedBeforeAnySave += 1 }
            // A temp file left behind means the kill landed between creating it and the rename.
            let leftovers = dir.files().filter { $0.hasPrefix(".flags.lkg.tmp-") }
            if !leftovers.isEmpty {
                outcomes.midWrite += 1
                for name in leftovers { try? FileManager.default.removeItem(atPath: dir.path + "/" + name) }
            }
            #expect(client.store.lastKnownGood(for: context)?.snapshot.flags.count ?? 300 == 300)
            lastKnown = version ?? lastKnown
            #expect(!FileManager.default.fileExists(atPath: file.path + ".corrupt"), "trial \(trial) produced a corrupt file")
        }
        print(
            "crash safety: \(trials) SIGKILL trials — loaded the previous snapshot \(outcomes.previous), the new one \(outcomes.new); "
                + "killed mid-write (temp file left) \(outcomes.midWrite), before its first save \(outcomes.killedBeforeAnySave); empty or corrupt: 0")
    }

    @Test func twoProcessesWritingAtOnceLoseNothing() async throws {
        guard let binary = writer() else {
            Issue.record("flag-stress was not built next to the tests")
            return
        }
        let dir = TempDir()
        let file = dir.url("flags.lkg")
        let rounds = 150
        let (app, appOutput) = try start(binary, ["write", file.path, "--context", "app", "--count", "\(rounds)", "--flags", "200"])
        let (widget, widgetOutput) = try start(binary, ["write", file.path, "--context", "widget", "--count", "\(rounds)", "--flags", "200"])
        let (appLines, widgetLines) = try await blocking { () -> (Int, Int) in
            let a = String(decoding: appOutput.readDataToEndOfFile(), as: UTF8.self)
            let w = String(decoding: widgetOutput.readDataToEndOfFile(), as: UTF8.self)
            _ = app.waitUntilExit()
            _ = widget.waitUntilExit()
            return (a.split(separator: "\n").count, w.split(separator: "\n").count)
        }
        #expect(app.termination?.succeeded == true && widget.termination?.succeeded == true)
        #expect(appLines == rounds && widgetLines == rounds)
        let client = FallbackClient(fileURL: file)
        guard case .loaded(let contexts, _) = client.store.loadOutcome else {
            Issue.record("the file did not load: \(client.store.loadOutcome)")
            return
        }
        #expect(contexts == 2)
        #expect(client.store.lastKnownGood(for: EvaluationContext(targetingKey: "app"))?.snapshot.version == "app-\(rounds)")
        #expect(client.store.lastKnownGood(for: EvaluationContext(targetingKey: "widget"))?.snapshot.version == "widget-\(rounds)")
        #expect(!FileManager.default.fileExists(atPath: file.path + ".corrupt"))
    }

    @Test func twoClientsInOneProcessMergeToo() async throws {
        try await blocking {
        let dir = TempDir()
        let file = dir.url("flags.lkg")
        let a = EvaluationContext(targetingKey: "a"), b = EvaluationContext(targetingKey: "b")
        let first = FallbackClient(fileURL: file, context: a)
        let second = FallbackClient(fileURL: file, context: b)
        for i in 1...5 {
            try first.store.save(snapshot(["n": .int(i)], version: "a\(i)"), etag: nil, for: a)
            try second.store.save(snapshot(["n": .int(i)], version: "b\(i)"), etag: nil, for: b)
        }
        let reader = FallbackClient(fileURL: file)
        #expect(reader.store.lastKnownGood(for: a)?.snapshot.version == "a5")
        #expect(reader.store.lastKnownGood(for: b)?.snapshot.version == "b5")
        // Each writer now knows the other's context too.
        #expect(first.store.fingerprints.count == 2)
        }
    }

    @Test func aHeldLockTimesOutWithAnError() async throws {
        try await blocking {
        let dir = TempDir()
        let file = dir.url("flags.lkg")
        let held = try FileLock.acquire(file.path + ".lock")
        defer { held.release() }
        let client = FallbackClient(fileURL: file)
        let clock = ContinuousClock()
        let start = clock.now
        let error = thrownError(FlagError.self) {
            try client.store.save(snapshot(["n": 1]), etag: nil, for: EvaluationContext(targetingKey: "x"))
        }
        #expect(clock.now - start >= .seconds(2))
        #expect(error?.message.contains("locked") == true)
        // The value is still kept in memory for this session.
        #expect(client.store.lastKnownGood(for: EvaluationContext(targetingKey: "x"))?.snapshot.flags["n"]?.value == 1)
        }
    }
}
}
