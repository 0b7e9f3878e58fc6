import ChildProcesses
import FeatureFlags
import FlagServer
import Foundation

/// The demo's crash-loop step: `flagctl launch` run as real processes against the demo's
/// server — a good launch, a release that turns `crashy_feature` on (two launches crash),
/// the guard's safe-mode launch that survives, and the fix that ends safe mode.
enum CrashLoopRehearsal {
    /// What one launch did.
    struct Launch {
        var crashed = false
        var safeModeAtLaunch = false
        var healthy = false
        var survivedInSafeMode = false
        var error = ""

        var label: String {
            if crashed { return "crash" }
            if survivedInSafeMode { return "safe mode, survived" }
            if healthy { return safeModeAtLaunch ? "safe mode → fixed, healthy" : "healthy" }
            return "ended (\(error.isEmpty ? "no output" : error))"
        }
    }

    /// The `flagctl` executable: this process when it is flagctl, else one beside it (tests
    /// run from the build directory). Nil where processes cannot be started.
    static func executable() -> URL? {
        #if os(Linux) || os(macOS)
        let me = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        for candidate in [me, me.deletingLastPathComponent().appendingPathComponent("flagctl")]
        where candidate.lastPathComponent == "flagctl" && FileManager.default.isExecutableFile(atPath: candidate.path) {
            return candidate
        }
        #endif
        return nil
    }

    /// Plays the script; the launches in order, or a reason it could not run.
    static func play(binary: URL, server: FlagServer, state: URL, budget: Duration) async -> Result<[Launch], RehearsalError> {
        let original = server.document
        defer { server.document = original }
        func release(crashy: Bool) {
            var document = original
            document.base.flags["crashy_feature"] = FlagEntry(value: .bool(crashy))
            document.base.version = crashy ? "release-crashy" : "release-fixed"
            server.document = document
        }
        var launches: [Launch] = []
        release(crashy: false)
        for step in ["good", "bad", "bad", "bad", "fixed"] {
            if step == "bad" && launches.count == 1 { release(crashy: true) }
            if step == "fixed" { release(crashy: false) }
            do {
                launches.append(try await launch(binary, endpoint: server.flagsURL, state: state, budget: budget))
            } catch {
                return .failure(error)
            }
        }
        return .success(launches)
    }

    struct RehearsalError: Error, CustomStringConvertible {
        let description: String
    }

    /// One `flagctl launch`, waited for (and ended if it outlives the fetch budget by 10 s).
    static func launch(_ binary: URL, endpoint: URL, state: URL, budget: Duration) async throws(RehearsalError) -> Launch {
        let arguments = [
            "launch", "--endpoint", endpoint.absoluteString, "--state", state.path,
            "--timeout", String(format: "%.3f", budget.seconds),
        ]
        let ended: ChildProcess.Outcome
        do {
            ended = try await ChildProcess.run(binary, arguments, timeout: budget + .seconds(10))
        } catch {
            throw RehearsalError(description: error.description)
        }
        let lines = ended.jsonLines
        var result = Launch()
        result.crashed = ended.crashed
        result.safeModeAtLaunch = lines.first?["safe_mode"] == true
        result.healthy = lines.contains { $0["phase"] == "healthy" }
        result.survivedInSafeMode = lines.contains { $0["phase"] == "survived in safe mode" }
        result.error = ended.timedOut ? "did not end" : ended.errorText.split(separator: "\n").last.map(String.init) ?? ""
        return result
    }
}
