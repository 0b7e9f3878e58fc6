import FeatureFlags
import Foundation

/// `flag-stress oversized`: the resident memory a provider keeps after answers far above the
/// response cap.
enum OversizedAnswers {
    static func run(urls: [URL], count: Int) async {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flag-stress-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = FlagFetcher.Configuration()
        configuration.budget = .seconds(10)
        // One provider per server, created up front: their sessions and threads exist before
        // the first measurement.
        let fetchers = urls.map { FlagFetcher(endpoint: JSONFlagEndpoint(post: $0), configuration: configuration) }
        let providers = fetchers.enumerated().map { index, fetcher in
            FeatureFlagProvider(
                context: EvaluationContext(targetingKey: "stress"), fetcher: fetcher,
                store: LastKnownGoodStore(fileURL: directory.appendingPathComponent("flags-\(index).lkg")),
                configuration: .init(changeStreams: false), reachability: AlwaysReachable(), lifecycle: AlwaysForeground())
        }
        defer { for provider in providers { provider.shutdown() } }
        var refused = 0
        var before: Int?
        for attempt in 0...count {
            // Attempt 0 fetches once from every server (setting each session up) before measuring.
            let round = attempt == 0 ? Array(providers.indices) : [(attempt - 1) % providers.count]
            var outcome = FetchOutcome.unchanged
            for index in round {
                outcome = await providers[index].refresh()
                await ended(fetchers[index])
            }
            if attempt > 0, outcome == .failed(.payloadTooLarge(limit: 1 << 20)) { refused += 1 }
            ProcessMemory.releaseFreeMemory()
            guard let now = ProcessMemory.residentBytes() else { fail("resident memory cannot be read here") }
            // The first round sets up the sessions and their threads: growth is counted after it.
            if let before { say("growth \(now - before)") } else { before = now }
        }
        say("refused \(refused)")
    }

    /// Waits (at most 10 s) until the fetcher's transfers have ended: on Linux, libcurl may read
    /// a transfer that was cancelled to its end.
    static func ended(_ fetcher: FlagFetcher) async {
        for _ in 0..<10_000 where (fetcher.transfersInFlight ?? 0) > 0 {
            try? await Task.sleep(for: .milliseconds(1))
        }
    }
}
