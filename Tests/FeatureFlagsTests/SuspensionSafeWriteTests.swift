import Foundation
import Testing
import TestSupport
@testable import FeatureFlags

/// The fallback file's lock and suspension (iOS kills an app suspended while holding a file
/// lock in an App Group container, 0xdead10cc): the lock is taken and released inside one
/// gated write; a write the system gives no time for does not start, takes no lock, and its
/// change is written with the next write.
@Suite("Fallback file writes and suspension")
struct SuspensionSafeWriteTests {
    let personal = EvaluationContext(targetingKey: "u1", attributes: ["plan": "personal"])
    let business = EvaluationContext(targetingKey: "u1", attributes: ["plan": "business"])

    /// Whether another process could take the file's lock now (an open file description of
    /// our own stands for it: `flock` locks conflict between descriptions).
    static func lockIsFree(_ file: URL) -> Bool {
        guard let lock = FileLock.tryAcquireExisting(file.path + ".lock") else { return false }
        lock.release()
        return true
    }

    @Test func theLockIsReleasedInsideTheGatedWriteOnEveryPath() throws {
        let dir = TempDir()
        let file = dir.url("app-group/flags.lkg")
        let checks = Locked<[Bool]>([])
        let gate = DiskWriteGate { _, write in
            write()
            // Still inside the time the system granted: the lock must already be free.
            checks.withLock { $0.append(Self.lockIsFree(file)) }
            return true
        }
        let store = LastKnownGoodStore(fileURL: file, capacity: 5, read: FileIO.read, gate: gate)
        try store.save(snapshot(["a": true]), etag: nil, for: personal)
        #expect(checks.withLock { $0 } == [true])
        // A write that fails under the lock (the file's place is taken by a directory): the
        // error is reported and the lock is free all the same.
        let blocked = dir.url("blocked/flags.lkg")
        try FileManager.default.createDirectory(at: blocked.appendingPathComponent("x"), withIntermediateDirectories: true)
        let failing = LastKnownGoodStore(
            fileURL: blocked, capacity: 5, read: FileIO.read,
            gate: DiskWriteGate { _, write in
                write()
                checks.withLock { $0.append(Self.lockIsFree(blocked)) }
                return true
            })
        #expect(throws: FlagError.self) { try failing.save(snapshot(["a": true]), etag: nil, for: personal) }
        #expect(checks.withLock { $0 } == [true, true])
    }

    @Test func aWriteTheSystemGivesNoTimeForDoesNotStartAndIsWrittenWithTheNext() throws {
        let dir = TempDir()
        let file = dir.url("flags.lkg")
        let allowed = Locked(false)
        let attempts = Locked(0)
        let gate = DiskWriteGate { _, write in
            attempts.withLock { $0 += 1 }
            guard allowed.withLock({ $0 }) else { return false }
            write()
            return true
        }
        let store = LastKnownGoodStore(fileURL: file, capacity: 5, read: FileIO.read, gate: gate)
        // Suspending: the save is refused before any file is touched — no lock file, no file.
        #expect(throws: FlagError(.general, LastKnownGoodStore.notStartedReason)) {
            try store.save(snapshot(["a": true], version: "v1"), etag: nil, for: personal)
        }
        #expect(dir.files().isEmpty)
        // In memory at once, as every save.
        #expect(store.lastKnownGood(for: personal)?.snapshot.version == "v1")
        // Back in the foreground: the next save writes both changes.
        allowed.withLock { $0 = true }
        try store.save(snapshot(["b": true], version: "v2"), etag: nil, for: business)
        #expect(attempts.withLock { $0 } == 2)
        let relaunched = LastKnownGoodStore(fileURL: file)
        #expect(relaunched.lastKnownGood(for: personal)?.snapshot.version == "v1")
        #expect(relaunched.lastKnownGood(for: business)?.snapshot.version == "v2")
        #expect(Self.lockIsFree(file))
    }

    @Test func linuxWritesAtOnce() {
        #if os(Linux)
        var ran = false
        #expect(DiskWriteGate.system.perform("test") { ran = true })
        #expect(ran)
        #endif
    }

    // The expiring-activity gate (the one Apple builds use on iOS, tvOS, watchOS, visionOS),
    // driven by activities that behave as `performExpiringActivity` may: its block on a thread
    // of its own, granted, refused, or called again with `expired` while the write runs.

    /// An activity that calls its block once, on a new thread, with `expired`; `expire()` calls it
    /// again (the system's "time is up" while the first call runs). Records which calls returned.
    final class ScriptedActivity: Sendable {
        let expired: Bool
        let block = Locked<(@Sendable (Bool) -> Void)?>(nil)
        let returned = Locked<[Bool]>([])
        let started = Locked(0)
        let oneReturned = DispatchSemaphore(value: 0)
        init(expired: Bool) { self.expired = expired }

        var gate: DiskWriteGate {
            DiskWriteGate.activity { [self] _, block in
                started.withLock { $0 += 1 }
                self.block.withLock { $0 = block }
                call(expired)
            }
        }

        func call(_ expired: Bool) {
            guard let block = block.withLock({ $0 }) else { return }
            Thread.detachNewThread { [self] in
                block(expired)
                returned.withLock { $0.append(expired) }
                oneReturned.signal()
            }
        }

        /// The system's second call, with `expired` true.
        func expire() { call(true) }

        /// Waits (bounded, ``TestTiming/waitDeadline`` per call) until `count` calls of the block have returned.
        func waitForReturns(_ count: Int) -> Bool {
            while returned.withLock({ $0.count }) < count {
                guard oneReturned.wait(timeout: TestTiming.waitDeadline) == .success else { return false }
            }
            return true
        }
    }

    @Test func anActivityThatGrantsTimeRunsTheWriteOnTheCallersThreadAndEndsAfterIt() {
        let activity = ScriptedActivity(expired: false)
        let caller = Thread.current
        let ranOnCaller = Locked<Bool?>(nil)
        let result = activity.gate.perform("write") {
            ranOnCaller.withLock { $0 = Thread.current == caller }
            // The activity's block is still waiting: the process is kept running.
            #expect(activity.returned.withLock { $0.isEmpty })
        }
        #expect(result)
        #expect(ranOnCaller.withLock { $0 } == true)
        #expect(activity.waitForReturns(1), "the activity's block never returned after the write")
        #expect(activity.started.withLock { $0 } == 1)
    }

    @Test func anActivityThatSaysNoTimeIsLeftRefusesTheWrite() {
        let activity = ScriptedActivity(expired: true)
        var ran = false
        #expect(!activity.gate.perform("write") { ran = true })
        #expect(!ran)
        #expect(activity.waitForReturns(1))
    }

    @Test func anExpiryWhileTheWriteRunsReturnsAtOnceAndTheWriteCompletes() {
        let activity = ScriptedActivity(expired: false)
        let sawExpiry = Locked(false)
        let result = activity.gate.perform("write") {
            // The system's second call (expired) returns without waiting for the write.
            activity.expire()
            sawExpiry.withLock { $0 = activity.waitForReturns(1) }
        }
        #expect(result)
        #expect(sawExpiry.withLock { $0 })
        #expect(activity.waitForReturns(2))
        #expect(activity.returned.withLock { $0 } == [true, false])
    }

    @Test func aStoreBehindARefusingActivityTakesNoLockAndKeepsTheChange() throws {
        let dir = TempDir()
        let file = dir.url("flags.lkg")
        let store = LastKnownGoodStore(fileURL: file, capacity: 5, read: FileIO.read, gate: ScriptedActivity(expired: true).gate)
        #expect(throws: FlagError(.general, LastKnownGoodStore.notStartedReason)) {
            try store.save(snapshot(["a": true], version: "v1"), etag: nil, for: personal)
        }
        #expect(dir.files().isEmpty)
        #expect(store.lastKnownGood(for: personal)?.snapshot.version == "v1")
    }
}
