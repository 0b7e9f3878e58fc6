import ChildProcesses
import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
@testable import FlagCtlCore

/// `flagctl demo` in-process. One at a time: a test checks that the demo leaves no temporary
/// directory behind, which another demo running beside it would confuse.
@Suite("flagctl demo", .serialized)
struct DemoCommandTests {
    let budget = generousTimeout

    /// Played by the built tool in a process of its own: its providers then have a cooperative
    /// thread pool of their own, not the two threads a whole parallel test run shares (under
    /// ThreadSanitizer that sharing alone kept the first fetch from running for over a minute).
    @Test func demoPlaysTheSeedScriptStepByStep() async throws {
        guard let binary = builtProduct("flagctl") else {
            Issue.record("flagctl was not built next to the tests")
            return
        }
        let (status, out) = try await blocking { () throws -> (Int32, CapturedLines) in
            let process = try ChildProcess(binary, ["demo", "--json"] + budget)
            let printed = process.output!.readDataToEndOfFile()
            let said = process.errors!.readDataToEndOfFile()
            let status = process.waitUntilExit().status
            func lines(_ data: Data) -> [String] { String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init) }
            return (status, CapturedLines(out: lines(printed), err: lines(said)))
        }
        #expect(status == 0)
        let lines = jsonLines(out.out)
        #expect(lines.count == out.out.count, "every line is JSON")
        // A start line (version, server), one line per step, an end line.
        #expect(lines.first?["kind"] == "start" && lines.first?["version"] == .string(FlagCtl.version))
        #expect(lines.first?["server"]?.stringValue?.hasPrefix("http://127.0.0.1:") == true && lines.first?["state"] == .null)
        #expect(lines.last == ["kind": "end", "steps": 13, "state": .null])
        let steps = lines.filter { $0["kind"] == "step" }
        #expect(steps.count == 13)
        func field(_ n: Int, _ name: String) -> FlagValue? { steps[n - 1][name] }
        // 1 launch: the server's defaults for an anonymous user.
        #expect(field(1, "plan_themeColor") == "#7F8C8D" && field(1, "status") == "READY", "step 1: \(steps[0]); stderr: \(out.err)")
        // 2 AuraLink Personal → Personal theme.
        #expect(field(2, "plan_themeColor") == "#3498DB" && field(2, "plan_displayName") == "AuraLink Personal")
        #expect(field(2, "source") == "network" && field(2, "reason") == "TARGETING_MATCH")
        // 3 Business → Business theme, features expanded.
        #expect(field(3, "plan_themeColor") == "#2C3E50")
        #expect(field(3, "plan_feature_list")?.listValue?.contains("team") == true)
        #expect((field(3, "plan_feature_list")?.listValue?.count ?? 0) > (field(2, "plan_feature_list")?.listValue?.count ?? 0))
        // 4 the server changes plan_themeColor → refresh → colour updates, version bumped.
        #expect(field(4, "plan_themeColor") == "#1ABC9C" && field(4, "version") == "2025-08-04T11:00:00Z")
        // 5 a bad hex colour → payload rejected, the Last-Known-Good stays.
        #expect(field(5, "plan_themeColor") == "#1ABC9C" && field(5, "version") == "2025-08-04T11:00:00Z")
        #expect(field(5, "source") == "fallback" && field(5, "status") == "ERROR")
        #expect(field(5, "note")?.stringValue?.contains("flags.plan_themeColor: \"#1ABC9G\" is not a hex-color") == true)
        // 6 kill switch → safe defaults, limited mode.
        #expect(field(6, "limited_mode") == true && field(6, "source") == "kill_switch" && field(6, "reason") == "DISABLED")
        #expect(field(6, "plan_themeColor") == "#7F8C8D" && field(6, "plan_feature_list") == [])
        // 7 kill switch off → values back.
        #expect(field(7, "plan_themeColor") == "#1ABC9C" && field(7, "limited_mode") == false && field(7, "status") == "READY")
        // 8 the server goes away → Last-Known-Good, still serving.
        #expect(field(8, "plan_themeColor") == "#1ABC9C" && field(8, "source") == "fallback" && field(8, "status") == "ERROR")
        // 9 back online.
        #expect(field(9, "source") == "network" && field(9, "status") == "READY" )
        // 10 venue change → exactly one re-fetch, the venue pilot on.
        #expect(field(10, "new_checkout") == true)
        #expect(field(10, "note")?.stringValue?.hasPrefix("1 re-fetch") == true)
        // 11 both tiers merged: Business theme and name, union of features, the larger limit.
        #expect(field(11, "plan_themeColor") == "#1ABC9C" && field(11, "plan_displayName") == "AuraLink Business")
        #expect(field(11, "plan_data_limit") == 750 && field(11, "plan_feature_list")?.listValue?.contains("team") == true)
        // 12 a release that crashes at launch, as real processes: two crashes, the guard's
        // safe-mode launch survives, the fix ends safe mode.
        // (Built with ThreadSanitizer, a launch's abort can end in the sanitizer's own CHECK failure
        // inside Swift's crash handler: an exit status, not a crash.)
        let launches = field(12, "note")?.stringValue ?? ""
        if TestTiming.underThreadSanitizer {
            #expect(launches.hasPrefix("launches: healthy · ") && launches.hasSuffix(" · safe mode, survived · safe mode → fixed, healthy"))
        } else {
            #expect(launches == "launches: healthy · crash · crash · safe mode, survived · safe mode → fixed, healthy", "\(launches)")
        }
        // 13 rules instead of values: a venue never fetched, offline, evaluated on the device.
        #expect(field(13, "new_checkout") == true && field(13, "plan_themeColor") == "#2C3E50")
        #expect(field(13, "source") == "fallback" && field(13, "reason") == "TARGETING_MATCH" && field(13, "version") == "rules-2025-08-04")
        #expect(field(13, "note") == "rules fetched once; the venue's fetch failed (the server is gone); evaluated on the device")
        #expect(field(1, "note") == "code defaults first (no fallback file yet), then the server's defaults", "a fresh state folder")
        #expect(field(13, "status") == "ERROR", "the offline fetch settles the status; the rules' values stay")
        #expect(steps.allSatisfy { $0["ms"]?.intValue != nil && $0["title"]?.stringValue != nil && $0["explains"]?.stringValue != nil })
        // Complete: every step carries every field the text shows.
        let fields: Set<String> = [
            "kind", "step", "title", "explains", "plan_themeColor", "plan_displayName", "plan_data_limit", "plan_feature_list",
            "new_checkout", "limited_mode", "source", "reason", "version", "status", "ms", "note",
        ]
        #expect(steps.allSatisfy { Set($0.keys) == fields })
    }

    @Test func demoTextFitsAnEightyColumnTerminal() async throws {
        let (status, out) = await run(["demo"] + budget)
        #expect(status == 0)
        let long = out.out.filter { $0.count > DemoCommand.textWidth }
        #expect(long.isEmpty, "\(long)")
        #expect(DemoCommand.textWidth == 80)
        // Each step: its number and title, then what it shows in plain words.
        #expect(out.out.contains { $0.hasPrefix(" 6  The operator turns the kill switch on") })
        #expect(out.out.contains("    Every flag falls to its safe default at once: the app runs in limited mode."))
        #expect(out.out.contains { $0.hasPrefix("    from    kill_switch · DISABLED · ") })
        #expect(out.out.suffix(2) == ["13 steps.", "Fallback file: a temporary directory, removed now; --state DIR keeps it."])
    }

    @Test func demoStopsQuietlyWhenNobodyReadsAndLeavesNoTemporaryDirectory() async throws {
        let (console, out) = Console.capturing(closingAfter: 4)
        let before = Self.demoDirectories()
        let status = await FlagCtl.run(["demo"] + budget, console: console)
        #expect(status == Console.closedOutputExit)
        #expect(out.out.count == 4 && out.err.isEmpty, "\(out.err)")
        #expect(Self.demoDirectories().subtracting(before).isEmpty)
    }

    /// The demo's temporary directories of this process.
    static func demoDirectories() -> Set<String> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: FileManager.default.temporaryDirectory.path)) ?? []
        return Set(names.filter { $0.hasPrefix("flagctl-demo-\(getpid())-") })
    }

    @Test func demoKeepsItsStateWhereAsked() async throws {
        let dir = TempDir()
        let (status, out) = await run(["demo", "--state", dir.path] + budget)
        #expect(status == 0)
        #expect(out.out.first?.hasPrefix("FeatureFlags demo") == true)
        #expect(out.out.last?.contains(dir.path) == true)
        #expect(FileManager.default.fileExists(atPath: dir.url("flags.lkg").path))
    }
}

/// What a child process printed, line by line.
struct CapturedLines: Sendable {
    let out: [String]
    let err: [String]
}
