import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting
import FlagServer

/// Status and labels change together: a reader on another thread, reading throughout
/// failures, recoveries, path changes and identifies, only ever sees combinations that the
/// provider serves on purpose.
@Suite("Provider transitions are atomic", .hangLimit(minutes: 2))
struct ProviderTransitionTests {
    /// The combinations a provider can serve (no kill switch in this test).
    static func isLegal(_ l: ServedLabels) -> Bool {
        if l.killed { return false }
        switch (l.status, l.source) {
        case (.ready, .network): return l.reasonOverride == nil
        case (.ready, _): return false
        case (_, .codeDefault): return true
        case (.stale, .fallback): return l.reasonOverride == .stale
        case (.notReady, .fallback), (.reconciling, .fallback), (.error, .fallback), (.fatal, .fallback):
            return l.reasonOverride == .cached
        default: return false
        }
    }

    @Test func aReaderNeverSeesAStateThatWasNotServed() async throws {
        let dir = TempDir()
        try seedFallback(dir, ["plan_themeColor": "#ABCDEF"])
        try seedFallback(dir, ["plan_themeColor": "#123456"], for: auraBusiness)
        let f = try ProviderFixture(dir: dir)
        defer { f.stop() }
        let provider = f.provider
        let reader = LabelReader { provider.labels }
        reader.start()
        let run = f.run()
        var transitions = 0
        #expect(await eventually { provider.status == .ready })
        for round in 0..<8 {
            // The service fails, then recovers on the backoff retry.
            f.server.fault = .status(500, retryAfter: nil)
            await f.clock.sleepers(atLeast: 1)
            f.clock.advanceToNextDeadline()
            #expect(await eventually { provider.status == .error })
            f.server.fault = nil
            await f.clock.sleepers(atLeast: 1)
            f.clock.advanceToNextDeadline()
            #expect(await eventually { provider.status == .ready })
            // The path goes down and comes back.
            f.reachability.set(false)
            #expect(await eventually { provider.status == .error })
            f.reachability.set(true)
            #expect(await eventually { provider.status == .ready })
            // Another context, then back.
            provider.identify(round % 2 == 0 ? auraBusiness : auraPersonal)
            #expect(await eventually { provider.status == .ready })
            transitions += 7
        }
        let seen = reader.stop()
        #expect(transitions == 56)
        #expect(seen.reads > 0)
        #expect(seen.illegal.isEmpty, "illegal combinations seen: \(seen.illegal)")
        provider.shutdown()
        await run.value
    }
}

/// Reads labels in a loop on its own thread until stopped, keeping every illegal combination.
final class LabelReader: Sendable {
    private let read: @Sendable () -> ServedLabels
    private let state = Locked<(stop: Bool, reads: Int, illegal: Set<String>, done: Bool)>((false, 0, [], false))
    private let finished = DispatchSemaphore(value: 0)

    init(_ read: @escaping @Sendable () -> ServedLabels) { self.read = read }

    func start() {
        let thread = Thread { [self] in
            var reads = 0
            var illegal = Set<String>()
            while !state.withLock({ $0.stop }) {
                for _ in 0..<64 {
                    let labels = read()
                    reads += 1
                    if !ProviderTransitionTests.isLegal(labels) {
                        illegal.insert("\(labels.status.rawValue)/\(labels.source.rawValue)/\(labels.reasonOverride?.rawValue ?? "-")")
                    }
                }
            }
            state.withLock { s in
                s.reads = reads
                s.illegal = illegal
            }
            finished.signal()
        }
        thread.start()
    }

    /// Stops the thread and returns what it saw.
    func stop() -> (reads: Int, illegal: Set<String>) {
        state.withLock { $0.stop = true }
        finished.wait()
        return state.withLock { ($0.reads, $0.illegal) }
    }
}
