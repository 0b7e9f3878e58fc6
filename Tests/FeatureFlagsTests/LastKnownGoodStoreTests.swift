import FlagServer
import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
@testable import FeatureFlagsUI

@Suite("LastKnownGoodStore")
struct LastKnownGoodStoreTests {
    let personal = EvaluationContext(targetingKey: "user-1", partner: "auralink", planTier: "personal")
    let business = EvaluationContext(targetingKey: "user-1", partner: "auralink", planTier: "business")

    @Test func firstLaunchIsEmptyAndWritesNothing() async throws {
        try await blocking {
            let dir = TempDir()
            let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
            #expect(store.loadOutcome == .noFile)
            #expect(store.lastKnownGood(for: personal) == nil)
            #expect(store.fingerprints.isEmpty)
            #expect(dir.files().isEmpty)
        }
    }

    @Test func roundTripAcrossRelaunch() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("flags.lkg")
            let fetched = FlagSnapshot(
                flags: [
                    "plan_themeColor": FlagEntry(value: "#3498DB", variant: "blue", reason: .targetingMatch, metadata: ["m": [1, 2.0]]),
                    "odd": FlagEntry(value: nil, reason: .error, errorCode: .parseError),
                    "nested": FlagEntry(value: ["a": ["b": [.null, true, -3, 0.25, "é"]]]),
                ],
                version: "2025-08-04T10:00:00Z", fetchedAt: Date(timeIntervalSince1970: 1_750_000_000.5), ttl: 86_400,
                contextFingerprint: personal.fingerprint)
            let tag = EntityTag("\"abc\"", endpoint: "0/ofrep")
            try LastKnownGoodStore(fileURL: url).save(fetched, etag: tag, for: personal)
            let relaunched = LastKnownGoodStore(fileURL: url)
            #expect(try relaunched.loadOutcome == .loaded(contexts: 1, bytes: Data(contentsOf: url).count))
            let restored = try #require(relaunched.lastKnownGood(for: personal))
            #expect(restored.snapshot == fetched)
            #expect(restored.etag == tag)
            // No tag is kept as no tag.
            try relaunched.save(fetched, etag: nil, for: business)
            #expect(LastKnownGoodStore(fileURL: url).lastKnownGood(for: business)?.etag == nil)
        }
    }

    @Test func aTagFromTheFirstFileVersionKeepsNoEndpoint() throws {
        // The first version wrote the tag without the endpoint that sent it (presence bit 16 unset).
        var w = ByteWriter(capacity: 64)
        w.u8(1)
        w.u8(4)
        w.u64((1_750_000_000.0).bitPattern)
        w.string("\"old\"")
        w.varint(0)
        let stored = try w.bytes.withUnsafeBytes { raw in try SnapshotCodec.decode(raw) }
        #expect(stored.etag == EntityTag("\"old\"", endpoint: ""))
        // Unknown fields are refused, not misread.
        var future = ByteWriter(capacity: 16)
        future.u8(1)
        future.u8(64)
        future.u64(0)
        future.varint(0)
        #expect(throws: ByteDecodingError.self) { try future.bytes.withUnsafeBytes { raw in try SnapshotCodec.decode(raw) } }
    }

    @Test func contextsAreIsolated() async throws {
        try await blocking {
            let dir = TempDir()
            let store = LastKnownGoodStore(fileURL: dir.url("f"))
            try store.save(snapshot(auraLinkPersonal), etag: nil, for: personal)
            try store.save(snapshot(auraLinkBusiness), etag: nil, for: business)
            #expect(store.lastKnownGood(for: personal)?.snapshot.flags["plan_themeColor"]?.value == "#3498DB")
            #expect(store.lastKnownGood(for: business)?.snapshot.flags["plan_themeColor"]?.value == "#2C3E50")
            #expect(store.lastKnownGood(for: EvaluationContext(targetingKey: "user-2")) == nil)
        }
    }

    @Test func leastRecentlyUsedContextsAreEvicted() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("f")
            let store = LastKnownGoodStore(fileURL: url, capacity: 3)
            let contexts = (0..<5).map { EvaluationContext(targetingKey: "user-\($0)") }
            for (n, context) in contexts.prefix(3).enumerated() {
                try store.save(snapshot(["n": .int(n)]), etag: nil, for: context)
            }
            // Using context 0 makes it most recent, so context 1 is evicted next.
            _ = store.use(contexts[0].fingerprint)
            try store.save(snapshot(["n": 3]), etag: nil, for: contexts[3])
            #expect(store.fingerprints == [contexts[3], contexts[0], contexts[2]].map(\.fingerprint))
            try store.save(snapshot(["n": 4]), etag: nil, for: contexts[4])
            #expect(store.fingerprints == [contexts[4], contexts[3], contexts[0]].map(\.fingerprint))
            let relaunched = LastKnownGoodStore(fileURL: url, capacity: 3)
            #expect(relaunched.fingerprints == [contexts[4], contexts[3], contexts[0]].map(\.fingerprint))
            #expect(relaunched.lastKnownGood(for: contexts[0])?.snapshot.flags["n"]?.value == 0)
            #expect(relaunched.lastKnownGood(for: contexts[1]) == nil)
        }
    }

    @Test func defaultCapacityIsFive() async throws {
        try await blocking {
            let dir = TempDir()
            let store = LastKnownGoodStore(fileURL: dir.url("f"))
            for n in 0..<7 { try store.save(snapshot(["n": .int(n)]), etag: nil, for: EvaluationContext(targetingKey: "u\(n)")) }
            #expect(store.capacity == 5)
            #expect(store.fingerprints.count == 5)
        }
    }

    @Test func fileIsPrivate() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("nested/dir/flags.lkg")
            let store = LastKnownGoodStore(fileURL: url)
            try store.save(snapshot(auraLinkPersonal), etag: nil, for: personal)
            #expect(FileIO.permissions(url.path) == 0o600)
            #expect(FileIO.permissions(dir.url("nested/dir").path) == 0o700)
            // A replaced file stays private even if someone loosened the old one.
            chmod(url.path, 0o644)
            try store.save(snapshot(auraLinkBusiness), etag: nil, for: business)
            #expect(FileIO.permissions(url.path) == 0o600)
            // No temp file is left behind.
            #expect(dir.files() == ["nested"])
            #expect((try? FileManager.default.contentsOfDirectory(atPath: dir.url("nested/dir").path))?.sorted() == ["flags.lkg", "flags.lkg.lock"])
            #expect(FileIO.permissions(dir.url("nested/dir/flags.lkg.lock").path) == 0o600)
        }
    }

    @Test func removeAndRemoveAll() async throws {
        try await blocking {
            let dir = TempDir()
            let store = LastKnownGoodStore(fileURL: dir.url("f"))
            try store.save(snapshot(auraLinkPersonal), etag: nil, for: personal)
            try store.save(snapshot(auraLinkBusiness), etag: nil, for: business)
            try store.remove(personal)
            #expect(store.lastKnownGood(for: personal) == nil)
            #expect(store.fingerprints == [business.fingerprint])
            try store.removeAll()
            #expect(LastKnownGoodStore(fileURL: dir.url("f")).fingerprints.isEmpty)
        }
    }

    @Test func leftoverTempFilesAreIgnored() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("flags.lkg")
            try LastKnownGoodStore(fileURL: url).save(snapshot(auraLinkPersonal), etag: nil, for: personal)
            // A crash mid-write leaves a temp file beside the real one.
            try Data("half-written garbage".utf8).write(to: dir.url(".flags.lkg.tmp-123-456"))
            let relaunched = LastKnownGoodStore(fileURL: url)
            #expect(relaunched.lastKnownGood(for: personal) != nil)
            try relaunched.save(snapshot(auraLinkBusiness), etag: nil, for: business)
            #expect(LastKnownGoodStore(fileURL: url).lastKnownGood(for: business)?.snapshot.flags["plan_themeColor"]?.value == "#2C3E50")
        }
    }

    @Test func tempFilesOfAWriterThatDiedAreRemoved() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("flags.lkg")
            try LastKnownGoodStore(fileURL: url).save(snapshot(auraLinkPersonal), etag: nil, for: personal)
            // Writers killed mid-write leave complete snapshots behind in temp files.
            for name in [".flags.lkg.tmp-101-1", ".flags.lkg.tmp-102-2"] { try Data(repeating: 7, count: 4_096).write(to: dir.url(name)) }
            try Data("keep".utf8).write(to: dir.url(".other.tmp-1"))
            let relaunched = LastKnownGoodStore(fileURL: url)
            // Opening only reads: no lock is taken, nothing is removed …
            #expect(dir.files().contains(".flags.lkg.tmp-101-1"), "opening the store removed files")
            // … the next write removes them, under the file lock.
            try relaunched.save(snapshot(auraLinkBusiness), etag: nil, for: business)
            #expect(dir.files() == [".other.tmp-1", "flags.lkg", "flags.lkg.lock"], "cleaned by the write")
            try Data(repeating: 7, count: 16).write(to: dir.url(".flags.lkg.tmp-103-3"))
            try relaunched.removeAll()
            #expect(dir.files() == [".other.tmp-1", "flags.lkg", "flags.lkg.lock"], "nothing of the old snapshots outlives a logout")
        }
    }

    @Test func aLockFileThatIsASymbolicLinkIsNotFollowed() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("flags.lkg")
            let target = dir.url("elsewhere")
            #expect(symlink(target.path, url.path + ".lock") == 0)
            let store = LastKnownGoodStore(fileURL: url)
            let error = thrownError(FlagError.self) {
                try store.save(snapshot(auraLinkPersonal), etag: nil, for: personal)
            }
            #expect(error?.message.contains("symbolic link") == true)
            #expect(!FileManager.default.fileExists(atPath: target.path), "nothing created where the link points")
            #expect(store.lastKnownGood(for: personal) != nil, "kept in memory for this session")
        }
    }

    @Test func aFileOthersCanChangeIsUsedWithAWarning() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("flags.lkg")
            try LastKnownGoodStore(fileURL: url).save(snapshot(auraLinkPersonal), etag: nil, for: personal)
            #expect(LastKnownGoodStore(fileURL: url).loadWarning == nil)
            chmod(url.path, 0o644)
            let open = LastKnownGoodStore(fileURL: url)
            #expect(open.loadWarning?.contains("open to other users (mode 644)") == true)
            #expect(open.lastKnownGood(for: personal) != nil, "used all the same")
            let client = FallbackClient(store: open, context: personal)
            #expect(client.recentEvents.contains { $0.kind == .fallbackWarning && $0.message == open.loadWarning })
            chmod(url.path, 0o600)
            if geteuid() == 0 {
                #expect(chown(url.path, 12_345, 12_345) == 0)
                #expect(LastKnownGoodStore(fileURL: url).loadWarning?.contains("owned by another user (uid 12345)") == true)
            }
        }
    }

    @Test func defaultLocationIsPerApp() {
        // On Linux the app is the process: this test binary.
        #if os(Linux)
        #expect(LastKnownGoodStore.defaultAppName == ProcessInfo.processInfo.processName)
        #endif
        let url = LastKnownGoodStore.defaultFileURL()
        #expect(url.deletingLastPathComponent().lastPathComponent == LastKnownGoodStore.defaultAppName)
        #expect(FlagOverrides.defaultFileURL().deletingLastPathComponent() == url.deletingLastPathComponent())
        #expect(LastKnownGoodStore.defaultFileURL(appName: "com.example.a") != LastKnownGoodStore.defaultFileURL(appName: "com.example.b"))
        // Any name becomes one folder.
        #expect(StoreLocation.folderName("com.example.pos") == "com.example.pos")
        #expect(StoreLocation.folderName("../../etc") == "_._.._etc")
        #expect(StoreLocation.folderName(".hidden") == "_hidden")
        #expect(StoreLocation.folderName("") == "app")
        #expect(StoreLocation.file(in: URL(fileURLWithPath: "/base"), appName: "a/b").path == "/base/a_b/flags.lkg")
    }

    @Test func defaultLocationFollowsXDGStateHome() {
        let url = LastKnownGoodStore.defaultFileURL(appName: "MyApp")
        #expect(url.lastPathComponent == "flags.lkg")
        #expect(url.deletingLastPathComponent().lastPathComponent == "MyApp")
        #if os(Linux)
        let env = ProcessInfo.processInfo.environment
        if let state = env["XDG_STATE_HOME"], state.hasPrefix("/") {
            #expect(url.path.hasPrefix(state))
        } else {
            #expect(url.path.contains("/.local/state/MyApp"))
        }
        #endif
    }

    @Test func coldStartDecodesOnlyWhatIsAskedFor() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("f")
            let store = LastKnownGoodStore(fileURL: url)
            var big: [String: FlagValue] = [:]
            for i in 0..<1_000 { big["flag_\(i)"] = i % 2 == 0 ? .bool(true) : .string("value-\(i)") }
            for n in 0..<5 { try store.save(snapshot(big), etag: nil, for: EvaluationContext(targetingKey: "u\(n)")) }
            let relaunched = LastKnownGoodStore(fileURL: url)
            #expect(relaunched.lastKnownGood(for: EvaluationContext(targetingKey: "u4"))?.snapshot.flags.count == 1_000)
        }
    }

    @Test func theKillHoldIsStoredBesideTheContextsAndOutsideTheCapacity() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("f")
            let store = LastKnownGoodStore(fileURL: url, capacity: 2)
            #expect(store.killHold == nil)
            let hold = KillHold(since: Date(timeIntervalSince1970: 1_750_000_000), context: personal.fingerprint)
            try store.setKillHold(hold)
            for n in 0..<3 { try store.save(snapshot(["n": .int(n)]), etag: nil, for: EvaluationContext(targetingKey: "u\(n)")) }
            let relaunched = LastKnownGoodStore(fileURL: url, capacity: 2)
            #expect(relaunched.killHold == hold)
            #expect(relaunched.fingerprints.count == 2, "the hold takes no context's place")
            #expect(try relaunched.loadOutcome == .loaded(contexts: 2, bytes: FileIO.read(url.path).count))
            // Setting it again writes nothing; releasing it does.
            let before = try FileIO.read(url.path)
            try relaunched.setKillHold(KillHold(since: Date(), context: business.fingerprint))
            #expect(try FileIO.read(url.path) == before)
            try relaunched.setKillHold(nil)
            #expect(LastKnownGoodStore(fileURL: url).killHold == nil)
            #expect(LastKnownGoodStore(fileURL: url, capacity: 2).fingerprints.count == 2)
        }
    }

    @Test func anUnreadableKillHoldRecordIsIgnoredNotFatal() throws {
        let dir = TempDir()
        let url = dir.url("f")
        let entries: [FallbackFileFormat.Entry] = [
            .init(fingerprint: KillHold.entryName, payload: [9, 9, 9]),
            .init(fingerprint: personal.fingerprint, payload: ArraySlice(SnapshotCodec.encode(StoredFlags(snapshot: snapshot(auraLinkPersonal), etag: nil)))),
        ]
        try Data(FallbackFileFormat.encode(entries)).write(to: url)
        let store = LastKnownGoodStore(fileURL: url)
        #expect(store.killHold == nil)
        #expect(store.fingerprints == [personal.fingerprint])
        #expect(store.lastKnownGood(for: personal) != nil)
    }

    /// The store's lock is never held during file I/O: while a writer waits on another
    /// process's file lock (up to its 2 s limit), reads of the store return at once.
    @Test func readsNeverWaitForAWriter() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("f")
            let store = LastKnownGoodStore(fileURL: url)
            try store.save(snapshot(auraLinkPersonal), etag: nil, for: personal)
            // Another process holds the file lock.
            let held = try FileLock.acquire(url.path + ".lock")
            let writing = Locked(true)
            Thread {
                _ = try? store.save(snapshot(auraLinkBusiness), etag: nil, for: business)
                writing.withLock { $0 = false }
            }.start()
            // The change reaches memory first; then the writer waits for the file lock (2 s at most).
            let clock = ContinuousClock()
            let limit = clock.now + .seconds(5)
            while store.lastKnownGood(for: business) == nil, clock.now < limit { sched_yield() }
            #expect(store.lastKnownGood(for: business)?.snapshot.flags["plan_themeColor"]?.value == "#2C3E50")
            var slowest = Duration.zero
            for _ in 0..<1_000 {
                let start = clock.now
                _ = store.lastKnownGood(for: personal)
                _ = store.lastKnownGood(for: business)
                slowest = max(slowest, clock.now - start)
            }
            #expect(writing.withLock { $0 }, "the writer is still waiting for the file lock")
            #expect(slowest < .milliseconds(100), "a read waited \(slowest)")
            held.release()
            // The writer finishes once the lock is free; the test ends after it.
            let done = clock.now + .seconds(5)
            while writing.withLock({ $0 }), clock.now < done { sched_yield() }
            #expect(!writing.withLock { $0 })
            #expect(LastKnownGoodStore(fileURL: url).lastKnownGood(for: business) != nil, "and the write reached the disk")
        }
    }

    /// Several writers of one process: each change reaches the disk, in order, and a later
    /// change for a context is never overwritten by an earlier one.
    @Test func concurrentWritersKeepTheLastChange() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("f")
            let store = LastKnownGoodStore(fileURL: url)
            let group = DispatchGroup()
            for writer in 0..<4 {
                group.enter()
                Thread {
                    for n in 0..<25 {
                        _ = try? store.save(snapshot(["n": .int(n)], version: "w\(writer)-\(n)"), etag: nil, for: EvaluationContext(targetingKey: "w\(writer)"))
                    }
                    group.leave()
                }.start()
            }
            group.wait()
            let relaunched = LastKnownGoodStore(fileURL: url)
            for writer in 0..<4 {
                #expect(relaunched.lastKnownGood(for: EvaluationContext(targetingKey: "w\(writer)"))?.snapshot.version == "w\(writer)-24")
            }
        }
    }
}
