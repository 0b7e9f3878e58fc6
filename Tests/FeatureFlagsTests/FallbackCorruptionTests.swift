import FlagServer
import Foundation
import Testing
import TestSupport
@testable import FeatureFlags

/// Every way the fallback file can be unusable: each loads an empty store with an event,
/// keeps the bad file aside, and never crashes.
@Suite("The fallback file when it is unusable")
struct FallbackCorruptionTests {
    let context = EvaluationContext(targetingKey: "user-1", venue: "v-42")

    /// A valid file of three contexts.
    private func validFileBytes() throws -> [UInt8] {
        let dir = TempDir()
        let url = dir.url("f")
        let client = FallbackClient(fileURL: url)
        try client.store.save(snapshot(auraLinkPersonal), etag: nil, for: EvaluationContext(targetingKey: "a"))
        try client.store.save(snapshot(auraLinkBusiness), etag: nil, for: EvaluationContext(targetingKey: "b"))
        try client.store.save(snapshot(["nested": ["x": [1, 2.5, .null]], "kill_switch": false]), etag: nil, for: context)
        return try FileIO.read(url.path)
    }

    private func rejection(_ client: FallbackClient) -> (reason: String, keptAt: String?)? {
        if case .rejected(let reason, let keptAt) = client.store.loadOutcome { return (reason, keptAt) }
        return nil
    }

    /// Loads `bytes` as the fallback file; checks it was rejected, set aside intact, and that
    /// the store is empty and writable afterwards.
    private func expectRejected(_ bytes: [UInt8], reasonContains expected: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let dir = TempDir()
        let url = dir.url("flags.lkg")
        try Data(bytes).write(to: url)
        let client = FallbackClient(fileURL: url, context: context)
        let rejected = try #require(rejection(client), "accepted \(bytes.count) bytes", sourceLocation: sourceLocation)
        if let expected {
            #expect(rejected.reason.contains(expected), "reason: \(rejected.reason)", sourceLocation: sourceLocation)
        }
        #expect(rejected.keptAt == url.path + ".corrupt", sourceLocation: sourceLocation)
        #expect(try FileIO.read(url.path + ".corrupt") == bytes, sourceLocation: sourceLocation)
        #expect(client.snapshot == .empty, sourceLocation: sourceLocation)
        #expect(client.store.fingerprints.isEmpty, sourceLocation: sourceLocation)
        #expect(client.recentEvents.contains(.fallbackRejected(reason: rejected.reason, keptAt: rejected.keptAt)), sourceLocation: sourceLocation)
        #expect(client.value(.themeColor) == "#000000", sourceLocation: sourceLocation)
    }

    @Test func truncatedAtEveryByteOffset() async throws {
        try await blocking {
            let bytes = try validFileBytes()
            #expect(bytes.count > 300)
            for length in 0..<bytes.count {
                let dir = TempDir()
                let url = dir.url("flags.lkg")
                let truncated = Array(bytes[0..<length])
                try Data(truncated).write(to: url)
                let client = FallbackClient(fileURL: url, context: context)
                guard case .rejected(_, let keptAt) = client.store.loadOutcome else {
                    Issue.record("truncation at \(length) was accepted")
                    continue
                }
                #expect(keptAt == url.path + ".corrupt")
                #expect(client.snapshot == .empty)
                #expect(client.recentEvents.contains { $0.kind == .fallbackRejected })
            }
            // The whole file still loads.
            let dir = TempDir()
            try Data(bytes).write(to: dir.url("f"))
            #expect(FallbackClient(fileURL: dir.url("f"), context: context).value(FlagKey("kill_switch", default: true)) == false)
        }
    }

    @Test func everySingleByteFlipIsDetected() async throws {
        try await blocking {
            let bytes = try validFileBytes()
            for i in bytes.indices {
                var flipped = bytes
                flipped[i] ^= 0x40
                let dir = TempDir()
                try Data(flipped).write(to: dir.url("f"))
                let client = FallbackClient(fileURL: dir.url("f"), context: context)
                #expect(rejection(client) != nil, "flip at byte \(i) went unnoticed")
            }
        }
    }

    @Test func appendedBytesAreDetected() async throws {
        try await blocking {
            try expectRejected(try validFileBytes() + [0], reasonContains: "truncated or padded")
        }
    }

    @Test func randomBytes() async throws {
        try await blocking {
            var generator = SplitMix(seed: 42)
            for size in [1, 3, 4, 27, 28, 29, 100, 4_096] {
                let bytes = (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
                try expectRejected(bytes)
            }
            // Random bytes behind a valid magic and version.
            for size in [6, 28, 64, 1_000] {
                var bytes = Array("FFLK".utf8) + [1, 0]
                bytes += (0..<size).map { _ in UInt8.random(in: 0...255, using: &generator) }
                try expectRejected(bytes)
            }
        }
    }

    @Test func emptyFile() async throws {
        try await blocking {
            try expectRejected([], reasonContains: "empty")
        }
    }

    @Test func wrongVersion() async throws {
        try await blocking {
            var bytes = try validFileBytes()
            bytes[4] = 2
            try expectRejected(bytes, reasonContains: "format version 2 is not supported")
        }
    }

    @Test func foreignFile() async throws {
        try await blocking {
            try expectRejected(Array(#"{"flags":{}}"#.utf8), reasonContains: "not a fallback file")
        }
    }

    @Test func directoryInPlaceOfTheFile() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("flags.lkg")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
            try Data("keep me".utf8).write(to: url.appendingPathComponent("inside.txt"))
            let client = FallbackClient(fileURL: url, context: context)
            #expect(client.store.loadOutcome == .rejected(reason: "a directory stands where the file should be", keptAt: nil))
            #expect(client.snapshot == .empty)
            // Saving fails with an error; the directory is untouched.
            #expect(throws: FlagError.self) { try client.store.save(snapshot(auraLinkPersonal), etag: nil, for: context) }
            #expect(try String(contentsOf: url.appendingPathComponent("inside.txt"), encoding: .utf8) == "keep me")
            // The values are still kept in memory for this session.
            #expect(client.store.lastKnownGood(for: context)?.snapshot.flags["plan_themeColor"]?.value == "#3498DB")
            #expect(dir.files() == ["flags.lkg", "flags.lkg.lock"])
        }
    }

    /// Unreadable is not corrupt: on iOS a file cannot be read before the first unlock after a
    /// reboot. It stays in place, untouched — the saved values and the saved kill with it.
    @Test func anUnreadableFileIsKeptInPlaceAndNeverOverwritten() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("flags.lkg")
            let bytes = try validFileBytes()
            try Data(bytes).write(to: url)
            // Root reads any file whatever its mode, so inject the failure the kernel gives others.
            let client = FallbackClient(
                store: LastKnownGoodStore(fileURL: url, capacity: 5, read: { _ throws(FileIOError) in throw .permissionDenied }),
                context: context)
            #expect(client.store.loadOutcome == .unavailable(reason: "unreadable for now: permission denied"))
            #expect(client.recentEvents.contains(.fallbackRejected(reason: "unreadable for now: permission denied", keptAt: url.path)))
            #expect(try FileIO.read(url.path) == bytes, "kept in place")
            #expect(!FileManager.default.fileExists(atPath: url.path + ".corrupt"))
            #expect(client.snapshot == .empty)
        }
    }

    @Test(.enabled(if: geteuid() != 0, "root ignores file modes"))
    func aFileWithoutReadPermissionIsKeptAndWritesWaitForIt() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("flags.lkg")
            let bytes = try validFileBytes()
            try Data(bytes).write(to: url)
            chmod(url.path, 0o000)
            let store = LastKnownGoodStore(fileURL: url)
            #expect(store.loadOutcome == .unavailable(reason: "unreadable for now: permission denied"))
            #expect(throws: FlagError.self) { try store.save(snapshot(auraLinkPersonal), etag: nil, for: context) }
            chmod(url.path, 0o600)
            #expect(try FileIO.read(url.path) == bytes, "nothing was overwritten while unreadable")
            // Readable again: the next write merges with what the file holds.
            try store.save(snapshot(auraLinkPersonal), etag: nil, for: context)
            let reloaded = LastKnownGoodStore(fileURL: url)
            #expect(reloaded.fingerprints.count == 3 && reloaded.lastKnownGood(for: context) != nil)
        }
    }

    @Test func fifoInPlaceOfTheFileDoesNotBlock() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("flags.lkg")
            #expect(mkfifo(url.path, 0o600) == 0)
            let client = FallbackClient(fileURL: url, context: context)
            #expect(client.store.loadOutcome == .rejected(reason: "unreadable: not a regular file", keptAt: url.path + ".corrupt"))
            try client.store.save(snapshot(auraLinkPersonal), etag: nil, for: context)
            #expect(FallbackClient(fileURL: url, context: context).value(.themeColor) == "#3498DB")
        }
    }

    @Test func badFileIsNeverOverwrittenWhenItCannotBeSetAside() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("flags.lkg")
            let garbage = Array("not a fallback file".utf8)
            try Data(garbage).write(to: url)
            // Non-empty directories at every quarantine path make the move fail.
            for name in [".corrupt"] + (2...9).map({ ".corrupt-\($0)" }) {
                try FileManager.default.createDirectory(atPath: url.path + name + "/x", withIntermediateDirectories: true)
            }
            let client = FallbackClient(fileURL: url, context: context)
            #expect(client.store.loadOutcome == .rejected(reason: "the file is not a fallback file (bad magic)", keptAt: nil))
            #expect(throws: FlagError.self) { try client.store.save(snapshot(auraLinkPersonal), etag: nil, for: context) }
            #expect(try FileIO.read(url.path) == garbage)
            #expect(client.store.lastKnownGood(for: context) != nil, "kept in memory")
        }
    }

    @Test func aSecondUnusableFileDoesNotOverwriteTheFirst() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("flags.lkg")
            try Data([1, 2, 3]).write(to: url)
            #expect(LastKnownGoodStore(fileURL: url).loadOutcome == .rejected(reason: "the file is not a fallback file (bad magic)", keptAt: url.path + ".corrupt"))
            try Data([4, 5, 6]).write(to: url)
            #expect(LastKnownGoodStore(fileURL: url).loadOutcome == .rejected(reason: "the file is not a fallback file (bad magic)", keptAt: url.path + ".corrupt-2"))
            #expect(try FileIO.read(url.path + ".corrupt") == [1, 2, 3])
            #expect(try FileIO.read(url.path + ".corrupt-2") == [4, 5, 6])
        }
    }

    @Test func afterRejectionTheStoreStartsAfresh() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("flags.lkg")
            try Data([1, 2, 3]).write(to: url)
            let client = FallbackClient(fileURL: url, context: context)
            try client.store.save(snapshot(auraLinkPersonal), etag: nil, for: context)
            let relaunched = FallbackClient(fileURL: url, context: context)
            #expect(try relaunched.store.loadOutcome == .loaded(contexts: 1, bytes: FileIO.read(url.path).count))
            #expect(relaunched.value(.themeColor) == "#3498DB")
            #expect(try FileIO.read(url.path + ".corrupt") == [1, 2, 3])
        }
    }

    @Test func hostileSnapshotPayloadsAreRejectedWithoutCrashing() async throws {
        try await blocking {
            // Valid container and checksums around payloads a buggy or hostile writer produced.
            var deep: [UInt8] = []  // a list holding a list holding … 100,000 deep
            for _ in 0..<100_000 { deep += [6, 1] }
            let head: [UInt8] = [1, 0] + [UInt8](repeating: 0, count: 8)  // encoding 1, no optionals, time 0
            let overlong: [UInt8] = [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]
            let oneFlagNamedA: [UInt8] = [1, 1, 0x61, 1]
            let payloads: [[UInt8]] = [
                [],
                [9],  // unknown snapshot encoding
                head + overlong,  // flag count varint too long
                head + [0xFF, 0xFF, 0xFF, 0x0F],  // count beyond the data
                head + oneFlagNamedA + deep,  // nesting 100,000 deep
                head + oneFlagNamedA + [42],  // unknown value tag
            ]
            for payload in payloads {
                let dir = TempDir()
                let url = dir.url("f")
                let file = FallbackFileFormat.encode([.init(fingerprint: context.fingerprint, payload: ArraySlice(payload))])
                try Data(file).write(to: url)
                let client = FallbackClient(fileURL: url, context: context)
                #expect(client.snapshot == .empty)
                #expect(client.recentEvents.contains { $0.kind == .fallbackRejected })
                #expect(client.store.fingerprints.isEmpty)
            }
        }
    }
}
