package import FeatureFlags
package import Foundation

/// The resident memory a provider keeps after answers far above the response cap, measured in
/// the process that runs it — a child process of the test or benchmark that serves the answers
/// (`flag-stress oversized`, `flag-benchmarks --oversized-child`), so that nothing else is counted.
package enum OversizedProbe {
    /// Fetches `count` times, from each of `urls` in turn, through a provider per URL, after one
    /// first round that sets the sessions up; `say` receives "growth BYTES" after each answer's
    /// transfer has ended (resident memory above the mark after the first round), then
    /// "refused R", the answers refused as too large. With `returningFreeMemory`, free memory
    /// goes back to the system before each reading (`malloc_trim`): what remains is what the
    /// process holds live; without, resident memory as an app's process would show it.
    /// Returns false when resident memory cannot be read here.
    package static func run(urls: [URL], count: Int, returningFreeMemory: Bool, say: (String) -> Void) async -> Bool {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flag-stress-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = FlagFetcher.Configuration()
        configuration.budget = .seconds(10)
        // One provider per server, created up front: their sessions and threads exist before
        // the first measurement.
        let fetchers = urls.map { FlagFetcher(endpoint: .json(post: $0), configuration: configuration) }
        let providers = fetchers.enumerated().map { index, fetcher in
            FeatureFlagProvider(
                context: EvaluationContext(targetingKey: "stress"), fetcher: fetcher,
                store: LastKnownGoodStore(fileURL: directory.appendingPathComponent("flags-\(index).lkg")),
                configuration: .init(changeStreams: false), reachability: AlwaysReachable(), lifecycle: AlwaysForeground())
        }
        defer { for provider in providers { provider.shutdown() } }
        var (calls, refused) = (0, 0)
        let measured = await measure(servers: urls.count, count: count, returningFreeMemory: returningFreeMemory, say: say) { index in
            let outcome = await providers[index].refresh()
            await ended(fetchers[index])
            calls += 1
            // The first round (one call per server) is not an answer of the count.
            if calls > urls.count, outcome == .failed(.payloadTooLarge(limit: 1 << 20)) { refused += 1 }
            return nil
        }
        guard measured else { return false }
        say("refused \(refused)")
        return true
    }

    /// The measurement every probe shares: `fetch(index)` once from each of `servers` (setting each
    /// session and its threads up), then `count` times from each in turn; after each of those, free
    /// memory returned first with `returningFreeMemory`, `say` receives "growth BYTES" (resident
    /// memory above the mark after the first round), then the line `fetch` returned, if any.
    /// Returns false when resident memory cannot be read here.
    package static func measure(
        servers: Int, count: Int, returningFreeMemory: Bool, say: (String) -> Void, fetch: (Int) async -> String?
    ) async -> Bool {
        var before: Int?
        for attempt in 0...count {
            let round = attempt == 0 ? Array(0..<servers) : [(attempt - 1) % servers]
            var line: String?
            for index in round { line = await fetch(index) }
            if returningFreeMemory { ProcessMemory.releaseFreeMemory() }
            guard let now = ProcessMemory.residentBytes() else { return false }
            guard let before else {
                before = now
                continue
            }
            say("growth \(now - before)")
            if let line { say(line) }
        }
        return true
    }

    /// Waits (at most 10 s) until the fetcher's transfers have ended: on Linux, libcurl may read
    /// a transfer that was cancelled to its end.
    package static func ended(_ fetcher: FlagFetcher) async {
        for _ in 0..<10_000 where (fetcher.transfersInFlight ?? 0) > 0 {
            try? await Task.sleep(for: .milliseconds(1))
        }
    }

    /// The figures of a run's growth lines: the peak; how far the second half's mean lies above
    /// the first's; and the slope of the last third (bytes per answer, least squares).
    package static func summary(_ growth: [Int]) -> (peak: Int, rise: Int, tailSlope: Int) {
        func mean(_ part: ArraySlice<Int>) -> Int { part.reduce(0, +) / max(1, part.count) }
        let half = growth.count / 2
        return (growth.max() ?? 0, mean(growth.suffix(half)) - mean(growth.prefix(half)), slope(growth.suffix(growth.count / 3)))
    }

    /// Whether the growth is a leak: the second half lies more than 2 MiB above the first and
    /// is still rising at the end (more than 20 KB per answer over the last third). The
    /// allocator's own steps can lift the second half by 2–3 MB and then stay flat; a leak
    /// (45 KB per answer would lift it by 2.2 MB) keeps rising to the last answer.
    package static func leaks(rise: Int, tailSlope: Int) -> Bool {
        rise > 2 << 20 && tailSlope > 20_000
    }

    /// Whether the growth scales with the count: `doubled`, a run through twice the answers of one
    /// that looked like a leak (`first`), still looks like one, its halves at least half as far
    /// apart again. What leaks per answer grows with the count; the allocator's steps do not.
    package static func scales(first: (rise: Int, tailSlope: Int), doubled: (rise: Int, tailSlope: Int)) -> Bool {
        leaks(rise: doubled.rise, tailSlope: doubled.tailSlope) && doubled.rise * 2 >= first.rise * 3
    }

    /// The least-squares slope of `values` against their position.
    static func slope(_ values: ArraySlice<Int>) -> Int {
        let n = Double(values.count)
        guard n > 1 else { return 0 }
        let xs = (0..<values.count).map(Double.init)
        let ys = values.map(Double.init)
        let meanX = xs.reduce(0, +) / n
        let meanY = ys.reduce(0, +) / n
        var covariance = 0.0
        var variance = 0.0
        for (x, y) in zip(xs, ys) {
            covariance += (x - meanX) * (y - meanY)
            variance += (x - meanX) * (x - meanX)
        }
        return Int(covariance / variance)
    }

    /// The growth lines of a probe's output.
    package static func growth(in output: String) -> [Int] {
        output.split(separator: "\n").compactMap { $0.hasPrefix("growth ") ? Int($0.dropFirst(7)) : nil }
    }
}
