import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
@testable import FeatureFlagsUI

/// Files at rest get a Data Protection class before a byte of them is written. Linux has no
/// Data Protection: these tests record, through the seam the Apple code path goes through, what
/// would be protected, with which class, and that the file was still empty then.
@Suite("Data Protection at rest")
struct DataProtectionTests {
    /// What `protect` was asked: the file's name, the class, and the file's size at that moment.
    final class Recorder: Sendable {
        let calls = Locked<[(name: String, protection: FileProtectionType, size: Int)]>([])
        var protect: @Sendable (String, FileProtectionType) -> Void {
            { path, protection in
                let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? -1
                let name = URL(fileURLWithPath: path).lastPathComponent
                self.calls.withLock { $0.append((name, protection, size)) }
            }
        }
    }

    static let context = EvaluationContext(targetingKey: "u1")

    @Test func theFallbackFileAndItsLockAreProtectedBeforeAnythingIsWritten() throws {
        let dir = TempDir()
        let recorder = Recorder()
        let store = LastKnownGoodStore(
            fileURL: dir.url("flags.lkg"), capacity: 5, read: FileIO.read, protect: recorder.protect)
        #expect(store.protection == .completeUntilFirstUserAuthentication, "the default")
        try store.save(FlagSnapshot(values: ["a": true], contextFingerprint: Self.context.fingerprint), etag: nil, for: Self.context)
        let calls = recorder.calls.withLock { $0 }
        #expect(calls.count == 2, "\(calls)")
        #expect(calls.first?.name == "flags.lkg.lock", "the lock file, when it is created")
        let data = try #require(calls.last)
        #expect(data.name.hasPrefix(".flags.lkg.tmp-"), "the new file, before it replaces the old: \(data.name)")
        #expect(data.size == 0, "protected before a byte was written")
        #expect(calls.allSatisfy { $0.protection == .completeUntilFirstUserAuthentication })

        // The next write: a new file again (protected again), the lock file exists already.
        try store.save(FlagSnapshot(values: ["a": false], contextFingerprint: Self.context.fingerprint), etag: nil, for: Self.context)
        let later = recorder.calls.withLock { $0 }.dropFirst(2)
        #expect(later.map(\.name).allSatisfy { $0.hasPrefix(".flags.lkg.tmp-") } && later.count == 1)
    }

    @Test func theClassIsTheOneConfigured() throws {
        let dir = TempDir()
        let recorder = Recorder()
        let store = LastKnownGoodStore(
            fileURL: dir.url("flags.lkg"), capacity: 5, read: FileIO.read, protection: .complete, protect: recorder.protect)
        try store.save(FlagSnapshot(values: ["a": true], contextFingerprint: Self.context.fingerprint), etag: nil, for: Self.context)
        #expect(recorder.calls.withLock { $0 }.map(\.protection.rawValue) == [FileProtectionType.complete.rawValue, FileProtectionType.complete.rawValue])
        #expect(LastKnownGoodStore(fileURL: dir.url("other.lkg"), protection: .none).protection == FileProtectionType.none)
    }

    @Test func aCopySetAsideIsProtectedLikeTheFile() throws {
        let dir = TempDir()
        try Data("not a fallback file".utf8).write(to: dir.url("flags.lkg"))
        let recorder = Recorder()
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"), capacity: 5, read: FileIO.read, protect: recorder.protect)
        // The unusable file is moved aside at load (a rename: its bytes keep the class they had).
        #expect(store.fingerprints.isEmpty)
        try store.save(FlagSnapshot(values: ["a": true], contextFingerprint: Self.context.fingerprint), etag: nil, for: Self.context)
        #expect(recorder.calls.withLock { $0 }.allSatisfy { $0.protection == .completeUntilFirstUserAuthentication })
    }

    @Test func theOverridesFileIsProtectedBeforeAnythingIsWritten() throws {
        let dir = TempDir()
        let recorder = Recorder()
        let overrides = FlagOverrides(
            fileURL: dir.url("overrides.json"), allowed: true, launch: nil, protection: .completeUnlessOpen, protect: recorder.protect)
        try overrides.override("new_checkout", true)
        let calls = recorder.calls.withLock { $0 }
        #expect(calls.count == 1 && calls.first?.name.hasPrefix(".overrides.json.tmp-") == true, "\(calls)")
        #expect(calls.first?.size == 0 && calls.first?.protection.rawValue == FileProtectionType.completeUnlessOpen.rawValue)
    }
}
