import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
@testable import FeatureFlagsUI
import FeatureFlagsTesting

/// The overrides object alone: setting, clearing, persisting, forbidding, launch files, and
/// every way a file can be unusable.
@Suite("Flag overrides")
struct FlagOverridesTests {
    static let newCheckout = FlagKey("new_checkout", default: false)
    static let tip = FlagKey("tip_percent", default: 10)

    @Test func overridesAreSetClearedAndSurviveARelaunch() throws {
        let dir = TempDir()
        let file = dir.url("overrides.json")
        let overrides = FlagOverrides(fileURL: file, allowed: true, launch: nil)
        try overrides.override(Self.newCheckout, true)
        try overrides.override("tip_percent", 15)
        #expect(overrides.values == ["new_checkout": true, "tip_percent": 15])
        #expect(overrides.fileURL == file && overrides.problems.isEmpty)

        let relaunched = FlagOverrides(fileURL: file, allowed: true, launch: nil)
        #expect(relaunched.values == ["new_checkout": true, "tip_percent": 15], "persisted across relaunch")
        try relaunched.clearOverride(Self.newCheckout)
        #expect(FlagOverrides(fileURL: file, allowed: true, launch: nil).values == ["tip_percent": 15])
        try relaunched.clearAll()
        #expect(FlagOverrides(fileURL: file, allowed: true, launch: nil).values.isEmpty)
        // The file is readable JSON with sorted keys.
        try relaunched.override("b", 1)
        try relaunched.override("a", "x")
        #expect(try String(contentsOf: file, encoding: .utf8) == "{\"a\":\"x\",\"b\":1}\n")
    }

    @Test func aReleaseBuildForbidsOverridesAndNeverReadsTheFile() throws {
        let dir = TempDir()
        let file = dir.url("overrides.json")
        try Data(#"{"new_checkout": true}"#.utf8).write(to: file)
        let forbidden = FlagOverrides(fileURL: file, allowed: false, launch: .json(#"{"x": 1}"#))
        #expect(forbidden.values.isEmpty, "the tester's file is ignored in a release build")
        #expect(forbidden.fileURL == nil && !forbidden.isAllowed)
        #expect(forbidden.problems.count == 1 && forbidden.problems[0].contains("not allowed"))
        #expect(throws: FlagError.overridesForbidden) { try forbidden.override(Self.newCheckout, true) }
        #expect(throws: FlagError.overridesForbidden) { try forbidden.clearOverride("new_checkout") }
        #expect(throws: FlagError.overridesForbidden) { try forbidden.clearAll() }
        #expect(throws: FlagError.overridesForbidden) { try forbidden.load(contentsOf: file) }
        #expect(try Data(contentsOf: file) == Data(#"{"new_checkout": true}"#.utf8), "the file is left as it was")
        let client = InMemoryFlagClient(["new_checkout": false], overrides: forbidden)
        #expect(client.value(Self.newCheckout) == false)
        #expect(client.recentEvents.contains { $0.kind == .overridesRejected })
    }

    @Test func refusedChangesLeaveEverythingAsItWas() throws {
        let overrides = FlagOverrides(fileURL: nil, allowed: true, launch: nil)
        #expect(throws: FlagError.emptyOverrideName) { try overrides.override("", true) }
        let unencodable = FlagKey<Date>("date", default: Date(), convert: { _ in nil }, encode: { _ in nil })
        #expect(throws: FlagError.unencodableOverride(flag: "date")) { try overrides.override(unencodable, Date()) }
        for n in 0..<FlagOverrides.maximumCount { try overrides.override("f\(n)", .int(n)) }
        #expect(throws: FlagError.tooManyOverrides(limit: FlagOverrides.maximumCount)) { try overrides.override("one_more", true) }
        try overrides.override("f0", 99)  // replacing one is fine at the limit
        #expect(overrides.values.count == FlagOverrides.maximumCount && overrides.value("f0") == 99)
    }

    /// A file the next launch would refuse loses every override in it: an override that would
    /// make the file larger than a read takes (1 MiB) or nest deeper than it parses is refused.
    @Test func anOverrideTheFileCouldNotReadBackIsRefusedAndTheRestKept() async throws {
        // Off the global executor's threads: loopback tests beside it need them.
        try await blocking {
            let dir = TempDir()
            let file = dir.url("overrides.json")
            let overrides = FlagOverrides(fileURL: file, allowed: true, launch: nil)
            try overrides.override("kept", true)
            let before = try Data(contentsOf: file)
            var deep: FlagValue = .list([])
            for _ in 0..<80 { deep = .list([deep]) }
            for value in [FlagValue.string(String(repeating: "x", count: 1 << 20)), deep] {
                #expect(throws: FlagError.self) { try overrides.override("refused", value) }
                #expect(overrides.values == ["kept": true] && overrides.value("refused") == nil)
                #expect(try Data(contentsOf: file) == before)
            }
            #expect(FlagOverrides(fileURL: file, allowed: true, launch: nil).values == ["kept": true])
            // A preset that reads, but grows when written again (`1e9` is written `1000000000.0`).
            let preset = dir.url("preset.json")
            let list = "[" + Array(repeating: "1e9", count: 250).joined(separator: ",") + "]"
            let members = (0..<1_000).map { #""k\#($0)":"# + list }.joined(separator: ",")
            try Data(("{" + members + "}").utf8).write(to: preset)
            #expect(try Data(contentsOf: preset).count < OverrideFile.maximumSize)
            #expect(throws: FlagError.self) { try overrides.load(contentsOf: preset) }
            #expect(overrides.values == ["kept": true])
            // Without a file there is nothing to read back: memory takes it.
            let inMemory = FlagOverrides(fileURL: nil, allowed: true, launch: nil)
            try inMemory.override("deep", deep)
            #expect(inMemory.value("deep") == deep)
        }
    }

    @Test func anUnwritableFileIsReportedAndTheOverrideStillApplies() throws {
        let dir = TempDir()
        try Data("not a directory".utf8).write(to: dir.url("blocker"))
        let overrides = FlagOverrides(fileURL: dir.url("blocker/overrides.json"), allowed: true, launch: nil)
        let client = InMemoryFlagClient(["new_checkout": false], overrides: overrides)
        do {
            try overrides.override(Self.newCheckout, true)
            Issue.record("expected notSaved")
        } catch {
            #expect(error.code == .general && error.message.hasPrefix("override in effect for this run only; saving it failed:"))
            #expect(error.message.contains("blocker"))
        }
        #expect(client.value(Self.newCheckout) == true, "in effect for this run")
    }

    @Test(arguments: ["{", "[1,2]", "\"text\"", #"{"": true}"#, String(repeating: " ", count: (1 << 20) + 1)])
    func anUnusablePersistedFileIsSetAsideNotOverwritten(_ content: String) throws {
        let dir = TempDir()
        let file = dir.url("overrides.json")
        try Data(content.utf8).write(to: file)
        let overrides = FlagOverrides(fileURL: file, allowed: true, launch: nil)
        #expect(overrides.values.isEmpty)
        #expect(overrides.problems.count == 1 && overrides.problems[0].contains("kept at"))
        #expect(try Data(contentsOf: dir.url("overrides.json.corrupt")) == Data(content.utf8), "nothing on disk is lost")
        try overrides.override("x", 1)
        #expect(FlagOverrides(fileURL: file, allowed: true, launch: nil).values == ["x": 1])
    }

    @Test func anUnreadableFileIsReportedAndLeftWhereItIs() throws {
        let dir = TempDir()
        let file = dir.url("overrides.json")
        try FileManager.default.createDirectory(at: file, withIntermediateDirectories: false)
        let overrides = FlagOverrides(fileURL: file, allowed: true, launch: nil)
        #expect(overrides.values.isEmpty)
        #expect(overrides.problems.count == 1 && overrides.problems[0].contains("unreadable"))
        #expect(!FileManager.default.fileExists(atPath: file.path + ".corrupt"), "not corrupt: nothing is set aside")
        #expect(throws: FlagError.self) { try overrides.override("x", 1) }
        #expect(overrides.value("x") == 1, "in effect for this run, though it cannot be saved")
    }

    @Test func launchOverridesDecideTheRunAndLeaveTheTestersFileAlone() throws {
        let dir = TempDir()
        let file = dir.url("overrides.json")
        try Data(#"{"tester": true}"#.utf8).write(to: file)
        let fixture = dir.url("fixture.json")
        try Data(#"{"new_checkout": true, "tip_percent": 20}"#.utf8).write(to: fixture)

        let launched = FlagOverrides(fileURL: file, allowed: true, launch: .file(fixture))
        #expect(launched.values == ["new_checkout": true, "tip_percent": 20], "exactly the launch file's")
        #expect(launched.fileURL == nil)
        try launched.override("during_test", 1)
        #expect(try Data(contentsOf: file) == Data(#"{"tester": true}"#.utf8), "a UI test never changes the tester's file")

        let inline = FlagOverrides(fileURL: file, allowed: true, launch: .json(#"{"new_checkout": false}"#))
        #expect(inline.values == ["new_checkout": false])

        for broken in [FlagOverrides.Launch.file(dir.url("missing.json")), .json("{nope")] {
            let overrides = FlagOverrides(fileURL: file, allowed: true, launch: broken)
            #expect(overrides.values.isEmpty, "a broken launch file means no overrides, not the tester's")
            #expect(overrides.problems.count == 1 && overrides.problems[0].contains("no overrides this run"))
        }
    }

    @Test func theLaunchArgumentWinsOverTheEnvironment() {
        typealias Launch = FlagOverrides.Launch
        #expect(Launch.current(arguments: ["app"], environment: [:]) == nil)
        #expect(Launch.current(arguments: ["app", "-FeatureFlagOverrides", "/tmp/a.json"], environment: [:]) == .file(URL(fileURLWithPath: "/tmp/a.json")))
        #expect(Launch.current(arguments: ["app"], environment: ["FEATURE_FLAG_OVERRIDES": #" {"a":1} "#]) == .json(#"{"a":1}"#))
        #expect(
            Launch.current(arguments: ["app", "-FeatureFlagOverrides", "/tmp/b.json"], environment: ["FEATURE_FLAG_OVERRIDES": "/tmp/c.json"])
                == .file(URL(fileURLWithPath: "/tmp/b.json")))
        #expect(Launch.current(arguments: ["app", "-FeatureFlagOverrides"], environment: [:]) == nil, "a flag without a value names nothing")
        #expect(Launch.current(arguments: ["app"], environment: ["FEATURE_FLAG_OVERRIDES": ""]) == nil)
        #expect(!Launch.json(#"{"secret": "value"}"#).description.contains("value"), "messages never show the values")
    }

    @Test func loadingAPresetReplacesEveryOverride() throws {
        let dir = TempDir()
        let overrides = FlagOverrides(fileURL: dir.url("overrides.json"), allowed: true, launch: nil)
        try overrides.override("old", 1)
        try Data(#"{"preset": true}"#.utf8).write(to: dir.url("preset.json"))
        try overrides.load(contentsOf: dir.url("preset.json"))
        #expect(overrides.values == ["preset": true])
        try Data("[]".utf8).write(to: dir.url("bad.json"))
        #expect(throws: FlagError.self) { try overrides.load(contentsOf: dir.url("bad.json")) }
        #expect(overrides.values == ["preset": true], "a bad preset changes nothing")
    }

    @Test func aSlowFileWriteHoldsUpNoOtherChangeAndTheFileEndsWithTheNewest() throws {
        let dir = TempDir()
        let file = dir.url("overrides.json")
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let firstWrite = Locked(true)
        let overrides = FlagOverrides(fileURL: file, allowed: true, launch: nil) { bytes, path throws(FileIOError) in
            if firstWrite.withLock({ first in defer { first = false }; return first }) {
                entered.signal()
                release.wait()   // the disk is slow
            }
            try FileIO.writeAtomically(bytes, to: path)
        }
        let told = Locked<[[String: FlagValue]]>([])
        let toldOne = DispatchSemaphore(value: 0)
        let (id, _) = overrides.attach { values in
            told.withLock { $0.append(values) }
            toldOne.signal()
        }
        defer { overrides.detach(id) }
        let finished = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            try? overrides.override("a", 1)
            finished.signal()
        }
        #expect(entered.wait(timeout: TestTiming.waitDeadline) == .success, "the first write never started")
        Thread.detachNewThread {
            try? overrides.override("b", 2)
            finished.signal()
        }
        // The second change reaches the clients while the first write is still held.
        #expect(toldOne.wait(timeout: TestTiming.waitDeadline) == .success)
        #expect(toldOne.wait(timeout: TestTiming.waitDeadline) == .success, "a change waited for another's file write")
        #expect(told.withLock { $0 } == [["a": 1], ["a": 1, "b": 2]])
        #expect(overrides.values == ["a": 1, "b": 2], "reads never wait for the disk")
        release.signal()
        #expect(finished.wait(timeout: TestTiming.waitDeadline) == .success && finished.wait(timeout: TestTiming.waitDeadline) == .success)
        #expect(FlagOverrides(fileURL: file, allowed: true, launch: nil).values == ["a": 1, "b": 2])
    }
}
