import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting
import FlagServer

@Suite("Concurrency")
struct ConcurrencyStressTests {
    /// 400 transports (400 providers' worth) start a request each at once. Each transport once
    /// had a queue of its own for its `URLSession` calls; on Linux those calls wait for
    /// FoundationNetworking's one work queue, so every waiting call held a dispatch thread, the
    /// pool ran out (255 threads) and the work queue found none to run on: the process hung.
    @Test(.hangLimit()) func fourHundredTransportsStartingAtOnceAllGetAnAnswer() async throws {
        let server = try FlagServer(document: .seedExample, configuration: .init(maxConnections: 512))
        defer { server.stop() }
        server.latency = .milliseconds(50)
        let transports = (0..<400).map { _ in URLSessionTransport() }
        defer { for transport in transports { transport.shutdown() } }
        let request = FlagRequest(url: server.flagsURL, method: "POST", body: Array("{}".utf8))
        let statuses = await withTaskGroup(of: Int.self) { group in
            for transport in transports {
                group.addTask { (try? await transport.send(request, maxBytes: 1 << 20, timeout: 30))?.status ?? -1 }
            }
            var statuses: [Int] = []
            for await status in group { statuses.append(status) }
            return statuses
        }
        #expect(statuses.count == 400)
        #expect(statuses.filter { $0 == 200 }.count == 400, "\(Dictionary(grouping: statuses, by: { $0 }).mapValues(\.count))")
    }

    @Test func readersOnTwoThreadsDuringAThousandActivationsIdentifiesAndRefreshes() async throws {
        let f = try ProviderFixture()
        defer { f.stop() }
        let provider = f.provider
        let themes: Set<String> = ["#000000", "#3498DB", "#2C3E50"]
        let stop = Locked(false)
        let readers = (0..<2).map { _ in
            Task.detached {
                try await blocking { () -> Int in
                    var reads = 0
                    while !stop.withLock({ $0 }) {
                        let theme = provider.value(.themeColor)
                        let details = provider.details(.themeColor)
                        #expect(themes.contains(theme), "read \(theme)")
                        #expect(details.source != .killSwitch)
                        _ = provider.bool("plan_priority_support", default: false)
                        _ = provider.snapshot.flags.count
                        reads += 1
                    }
                    return reads
                }
            }
        }
        var operations = 0
        for i in 0..<1_000 {
            switch i % 4 {
            case 0: provider.identify(i % 8 == 0 ? auraPersonal : auraBusiness)
            case 1, 2: _ = await provider.refresh()
            default:
                // An activation straight from the fallback: another identify round trip.
                provider.identify(auraPersonal)
                provider.identify(auraBusiness)
            }
            operations += 1
        }
        stop.withLock { $0 = true }
        var reads = 0
        for reader in readers { reads += try await reader.value }
        #expect(operations == 1_000)
        #expect(reads > 1_000)
        _ = await provider.refresh()
        #expect(provider.status == .ready)
        #expect(provider.value(.themeColor) == "#2C3E50")
    }

    /// A wake-up that resumes a sleeper while the sleeper's task is being cancelled. Resuming a
    /// task takes that task's lock; cancelling it holds that lock while its cancellation handler
    /// runs, and the handler calls `transition`. When resumptions ran under the provider's
    /// `order` lock, the two threads waited for each other for good: a whole `swift test` under
    /// ThreadSanitizer once stopped there. Here every round races the two on plain threads, so
    /// a deadlock fails the test at the bound instead of stalling the cooperative threads.
    @Test func aWakeUpRacingTheSleepersCancellationNeverDeadlocks() async throws {
        let dir = TempDir()
        let provider = FeatureFlagProvider(
            context: auraPersonal, fetcher: FlagFetcher(endpoint: .json(post: URL(string: "http://127.0.0.1:9/")!)),
            store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), reachability: ManualReachability(true))
        let rounds = 2_000
        let done = Locked(0)
        let driver = Thread {
            let go = DispatchSemaphore(value: 0)
            let cancelled = DispatchSemaphore(value: 0)
            let target = Locked<Task<Void, Never>?>(nil)
            let canceller = Thread {
                while true {
                    go.wait()
                    guard let task = target.withLock({ $0 }) else { return }
                    task.cancel()
                    cancelled.signal()
                }
            }
            canceller.start()
            for _ in 0..<rounds {
                let ended = DispatchSemaphore(value: 0)
                // On threads of its own: a full parallel run keeps the cooperative threads busy
                // for seconds at a time, and this driver thread waits for the sleeper to end.
                let sleep: @Sendable () async -> Void = {
                    await provider.waitForWakeUp(.healthTimer)
                    ended.signal()
                }
                let sleeper: Task<Void, Never>
                if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) {
                    sleeper = Task.detached(executorPreference: OwnThreadExecutor.shared, operation: sleep)
                } else {
                    sleeper = Task.detached(operation: sleep)
                }
                target.withLock { $0 = sleeper }
                go.signal()
                // Another sleeper replaces this one, which resumes it: the wake-up, on this thread.
                provider.transition(.sleep(.healthTimer, id: -1, resume: {}))
                cancelled.wait()
                ended.wait()
                provider.transition(.stopSleeping(.healthTimer, id: -1))
                done.withLock { $0 += 1 }
            }
            target.withLock { $0 = nil }
            go.signal()
        }
        driver.start()
        let finished = await eventually { done.withLock { $0 } == rounds }
        #expect(finished, "\(done.withLock { $0 }) of \(rounds) rounds: a wake-up and a cancellation deadlocked")
        // A deadlocked provider holds its lock for good: shutting it down would block this task.
        if finished { provider.shutdown() }
    }

    @Test func shutdownDuringAFetch() async throws {
        let f = try ProviderFixture()
        defer { f.server.stop() }
        f.server.fault = .hangBeforeHeaders
        let provider = f.provider
        let run = Task { await provider.run() }
        let refresh = Task { await provider.refresh() }
        #expect(await eventually { f.server.requestCount >= 1 })
        provider.shutdown()
        let outcome = await refresh.value
        #expect(outcome == .discarded || outcome == .skipped("shut down"))
        await run.value
        #expect(f.clock.sleeperCount == 0)
        #expect(!f.provider.isFetching)
        #expect(await provider.refresh() == .skipped("shut down"))
    }

    @Test func droppingAProviderWithoutShutdownFreesEverything() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let dir = TempDir()
        weak var weakProvider: FeatureFlagProvider?
        weak var weakFetcher: FlagFetcher?
        weak var weakStore: LastKnownGoodStore?
        do {
            let fetcher = FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: .loopback)
            let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
            let provider = FeatureFlagProvider(
                context: auraPersonal, fetcher: fetcher, store: store, reachability: ManualReachability(true))
            _ = await provider.refresh()
            let changes = provider.changes()
            _ = changes
            weakProvider = provider
            weakFetcher = fetcher
            weakStore = store
        }
        #expect(await eventually { weakProvider == nil && weakFetcher == nil && weakStore == nil })
    }

    /// The URLSession keeps its delegate alive until invalidated; the transport must still go
    /// away when nobody shuts it down (its deinit invalidates the session).
    @Test func aTransportNobodyShutDownIsReleased() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        weak var weakTransport: URLSessionTransport?
        do {
            let transport = URLSessionTransport()
            weakTransport = transport
            let fetcher = FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: .loopback, transport: transport)
            #expect(snapshot(of: await fetcher.fetch(auraPersonal)) != nil)
        }
        #expect(await eventually { weakTransport == nil })
    }

    @Test func aRunLoopEndsWhenItsTaskIsCancelled() async throws {
        let f = try ProviderFixture()
        defer { f.stop() }
        let provider = f.provider
        let run = Task { await provider.run() }
        #expect(await eventually { provider.status == .ready })
        await f.clock.sleepers(atLeast: 1)
        run.cancel()
        await run.value
        #expect(await eventually { f.clock.sleeperCount == 0 })
    }
}
