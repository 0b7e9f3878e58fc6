import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FlagServer

/// Serving a file: a reload in progress and a request that comes meanwhile.
@Suite("FlagServer hot reload")
struct HotReloadTests {
    /// Holds the next read of the served file until released, and says when one is held.
    final class ReadGate: Sendable {
        private let state = Locked((armed: false, held: false))
        private let released = DispatchSemaphore(value: 0)

        /// The next read waits for ``release()``.
        func arm() { state.withLock { $0.armed = true } }
        var isHolding: Bool { state.withLock { $0.held } }
        func release() { released.signal() }

        func read(_ path: String) throws -> [UInt8] {
            let hold = state.withLock { s -> Bool in
                guard s.armed else { return false }
                s.armed = false
                s.held = true
                return true
            }
            // Bounded: a test that failed before releasing does not hang the server's stop. The
            // bound is the tests' longest wait, not seconds: a hold that ran out while the test
            // was starved (a loaded TSan run) would let the reload finish before the request.
            if hold { _ = released.wait(timeout: TestTiming.waitDeadline) }
            return try FileIO.read(path)
        }
    }

    @Test func aRequestThatComesDuringAReloadIsAnsweredFromTheNewDocument() async throws {
        let dir = TempDir()
        let file = dir.url("flags.json")
        try Data(ServerDocument.seedExample.jsonBytes()).write(to: file)
        let gate = ReadGate()
        let reloads = Locked(0)
        let server = try FlagServer(
            file: file.path, onReload: { _ in reloads.withLock { $0 += 1 } }, reading: { try gate.read($0) })
        defer { server.stop() }
        defer { gate.release() }
        let fetcher = FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: .loopback)
        defer { fetcher.shutdown() }
        var changed = ServerDocument.seedExample
        changed.rules[1].flags["plan_themeColor"] = FlagEntry(value: "#112233")
        gate.arm()
        try Data(changed.jsonBytes()).write(to: file, options: .atomic)
        // The file watcher (every 200 ms) finds the change and is held reading it.
        #expect(await eventually { gate.isHolding })
        async let answer = fetcher.fetch(auraPersonal)
        // The request gets there while the reload is held, and must be answered from the new
        // document: the reload it meets in progress is waited for, not skipped.
        // Counted at accept and never decreasing: the open-connection count can fall back to
        // zero between two looks once the answer is sent.
        #expect(await eventually { server.connectionRate.total >= 1 })
        gate.release()
        let fetched = await answer
        #expect(snapshot(of: fetched)?.flags["plan_themeColor"]?.value == "#112233", "\(fetched)")
        #expect(server.reloadCount == 1)
        #expect(await eventually { reloads.withLock { $0 } == 1 }, "onReload told once, after the reload")
    }

    @Test func aFileThatCannotBeReadKeepsTheDocumentAndSaysWhy() async throws {
        let dir = TempDir()
        let file = dir.url("flags.json")
        try Data(ServerDocument.seedExample.jsonBytes()).write(to: file)
        let failing = Locked(false)
        let results = Locked<[Result<ServerDocument, FlagError>]>([])
        let server = try FlagServer(
            file: file.path, onReload: { result in results.withLock { $0.append(result) } },
            reading: { path in
                if failing.withLock({ $0 }) { throw FileIOError.system(operation: "read", errno: EIO) }
                return try FileIO.read(path)
            })
        defer { server.stop() }
        let fetcher = FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: .loopback)
        defer { fetcher.shutdown() }
        failing.withLock { $0 = true }
        var changed = ServerDocument.seedExample
        changed.rules[1].flags["plan_themeColor"] = FlagEntry(value: "#112233")
        try Data(changed.jsonBytes()).write(to: file, options: .atomic)
        let served = try #require(snapshot(of: await fetcher.fetch(auraPersonal)))
        #expect(served.flags["plan_themeColor"]?.value == "#3498DB", "the last document read is served")
        #expect(server.reloadCount == 0)
        #expect(server.lastReloadError?.contains("cannot read") == true, "\(server.lastReloadError ?? "none")")
        #expect(await eventually { results.withLock { $0.count } == 1 })
        guard case .failure? = results.withLock({ $0.first }) else {
            Issue.record("onReload was not told of the failure")
            return
        }
    }
}
