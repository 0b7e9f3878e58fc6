import FeatureFlags
import FlagServer
import Foundation

/// Answers far above the 1 MiB response cap, one after another — declared with a
/// Content-Length, chunked, and delimited by closing the connection — against a provider:
/// the process's resident memory after each transfer has ended (free memory handed back
/// first) must stay within a bound, and must not rise with the count. The test
/// `aHundredHugeBodiesKeepTheProcessBounded` checks the same in a process of its own.
enum OversizedBenchmarks {
    static func run(_ report: Report, quick: Bool) async throws {
        let count = quick ? 30 : 100
        let size = 50_000_000
        report.section("Oversized answers — \(count) in a row, \(size / 1_000_000) MB each (three framings), against the 1 MiB cap")
        let server = try FlagServer(document: ServerDocument(base: FlagDocument(version: "bench", flags: sampleFlags(10))))
        defer { server.stop() }
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = FlagFetcher.Configuration()
        configuration.budget = .seconds(10)
        let fetcher = FlagFetcher(endpoint: JSONFlagEndpoint(post: server.flagsURL), configuration: configuration)
        let provider = FeatureFlagProvider(
            context: EvaluationContext(targetingKey: "bench"),
            fetcher: fetcher,
            store: LastKnownGoodStore(fileURL: directory.appendingPathComponent("flags.lkg")),
            configuration: .init(changeStreams: false), reachability: AlwaysReachable(), lifecycle: AlwaysForeground())
        defer { provider.shutdown() }
        guard case .updated = await provider.refresh() else { throw BenchmarkError("the first fetch failed") }
        ProcessMemory.releaseFreeMemory()
        guard let before = ProcessMemory.residentBytes() else {
            report.note("resident memory cannot be read on this platform")
            return
        }
        let faults: [FlagServer.Fault] = [
            .oversizedBody(bytes: size), .oversizedChunkedBody(bytes: size), .oversizedCloseDelimitedBody(bytes: size),
        ]
        var growth: [Int] = []
        var refused = 0
        for index in 0..<count {
            server.fault = faults[index % faults.count]
            if await provider.refresh() == .failed(.payloadTooLarge(limit: 1 << 20)) { refused += 1 }
            // The server has stopped sending once the connection is gone.
            // The transfer has ended: libcurl may read a cancelled transfer to its end on Linux.
            for _ in 0..<5_000 where (fetcher.transfersInFlight ?? 0) > 0 || server.connectionCount > 0 {
                try await Task.sleep(for: .milliseconds(1))
            }
            ProcessMemory.releaseFreeMemory()
            growth.append((ProcessMemory.residentBytes() ?? before) - before)
        }
        server.fault = nil
        let peak = growth.max() ?? 0
        let firstHalf = growth.prefix(count / 2).max() ?? 0
        let secondHalf = growth.suffix(count / 2).max() ?? 0
        let mib = 1 << 20
        report.add(.init(section: "oversized", name: "answers refused as too large", value: Double(refused), unit: "of \(count)",
                         budget: "= \(count)", passed: refused == count))
        report.add(.init(section: "oversized", name: "peak resident growth over \(count) oversized answers", value: Double(peak), unit: "bytes",
                         budget: "≤ 16 MiB", passed: peak <= 16 * mib))
        // glibc gives each thread that allocates an arena of its own, and each keeps some memory
        // after a burst: the growth steps up (by 1–3 MB) whenever a new thread carries a burst,
        // until the arenas run out (8 per core). A leak would rise with every answer instead.
        report.add(.init(section: "oversized", name: "growth, second half above the first", value: Double(max(0, secondHalf - firstHalf)), unit: "bytes",
                         budget: "≤ 4 MiB", passed: secondHalf - firstHalf <= 4 * mib))
    }
}
