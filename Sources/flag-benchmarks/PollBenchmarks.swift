import FeatureFlags
import FlagServer
import Foundation

/// One unchanged poll cycle against a loopback FlagServer: a conditional request, a 304,
/// no decode, no disk write.
enum PollBenchmarks {
    /// Counts decodes, to prove a 304 costs none.
    final class CountingEndpoint: EndpointFormat {
        let inner: FlagEndpoint
        let url: URL
        private let count = Locked(0)
        init(url: URL) {
            self.url = url
            inner = FlagEndpoint.json(post: url)
        }
        var name: String { "json" }
        var decodes: Int { count.withLock { $0 } }
        func request(for context: EvaluationContext, etag: String?) throws(FlagError) -> FlagRequest {
            try inner.request(for: context, etag: etag)
        }
        func decode(_ response: FlagResponse, for context: EvaluationContext) throws(FlagError) -> DecodedFlags {
            count.withLock { $0 += 1 }
            return try inner.decode(response, for: context)
        }
    }

    static func run(_ report: Report, quick: Bool) async throws {
        report.section("Unchanged poll — provider.refresh() against a loopback FlagServer serving 1,000 flags")
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try FlagServer(document: ServerDocument(base: FlagDocument(version: "bench", ttl: 300, flags: sampleFlags(1_000))))
        defer { server.stop() }
        let context = EvaluationContext(targetingKey: "bench", venue: "venue-42")
        let endpoint = CountingEndpoint(url: server.flagsURL)
        let file = directory.appendingPathComponent("flags.lkg")
        let provider = FeatureFlagProvider(
            context: context, fetcher: FlagFetcher(endpoint: endpoint), store: LastKnownGoodStore(fileURL: file),
            reachability: AlwaysReachable())
        defer { provider.shutdown() }
        guard case .updated = await provider.refresh() else { throw BenchmarkError("the first fetch failed") }
        let full = server.requests[0]
        let stamp = FileStamp(path: file.path)
        let decodesBefore = endpoint.decodes

        let polls = quick ? 20 : 50
        let runs = quick ? 5 : 10
        var samples: [Double] = []
        var unchanged = true
        for run in 0..<(runs + 1) {
            let start = DispatchTime.now().uptimeNanoseconds
            for _ in 0..<polls where await provider.refresh() != .unchanged { unchanged = false }
            if run > 0 { samples.append(Double(DispatchTime.now().uptimeNanoseconds - start) / Double(polls)) }
        }
        samples.sort()
        let median = samples[samples.count / 2]
        let last = server.requests[server.requests.count - 1]
        let wire = last.requestBytes + last.responseHeadBytes + last.bytesSent
        let fullWire = full.requestBytes + full.responseHeadBytes + full.bytesSent
        report.add(.init(section: "poll", name: "unchanged poll (304), per cycle", value: median / 1_000, unit: "µs", spread: (samples[samples.count * 9 / 10] - samples[samples.count / 10]) / median))
        let serverTimes = server.requests.dropFirst().compactMap { $0.duration.map { Double($0.components.attoseconds) / 1e12 + Double($0.components.seconds) * 1e6 } }.sorted()
        if !serverTimes.isEmpty {
            report.add(.init(section: "poll", name: "of which the FlagServer's own time per 304", value: serverTimes[serverTimes.count / 2], unit: "µs"))
        }
        report.add(.init(section: "poll", name: "bytes on the wire per unchanged poll", value: Double(wire), unit: "bytes", floor: "full 200 fetch", ratio: Double(wire) / Double(fullWire)))
        report.add(.init(section: "poll", name: "bytes on the wire for the full 200 fetch", value: Double(fullWire), unit: "bytes"))
        let decodes = endpoint.decodes - decodesBefore
        report.add(.init(section: "poll", name: "decodes during \(polls * (runs + 1)) unchanged polls", value: Double(decodes), unit: "count", budget: "= 0", passed: decodes == 0 && unchanged))
        let written = FileStamp(path: file.path) != stamp
        report.add(.init(section: "poll", name: "fallback file rewritten by unchanged polls", value: written ? 1 : 0, unit: "count", budget: "= 0", passed: !written))
        provider.shutdown()
        try await runLaunch(report, server: server, file: file, context: context)
    }

    /// A relaunch on the file the provider above left, against the same unchanged service,
    /// change streams on: the kept streams open, then one conditional request, a 304.
    static func runLaunch(_ report: Report, server: FlagServer, file: URL, context: EvaluationContext) async throws {
        let stamp = FileStamp(path: file.path)
        let before = server.requests.count
        let endpoint = CountingEndpoint(url: server.flagsURL)
        let provider = FeatureFlagProvider(
            context: context, fetcher: FlagFetcher(endpoint: endpoint), store: LastKnownGoodStore(fileURL: file),
            reachability: AlwaysReachable(), lifecycle: AlwaysForeground())
        let loop = Task { await provider.run() }
        defer {
            loop.cancel()
            provider.shutdown()
        }
        guard await provider.waitUntilReady(timeout: .seconds(5)) == .ready else { throw BenchmarkError("the relaunch did not get ready") }
        for _ in 0..<500 where provider.openStreamCount == 0 || provider.isFetching {
            try await Task.sleep(for: .milliseconds(2))
        }
        let fetches = server.requests.dropFirst(before).filter { $0.route != "GET /events" }
        let conditional = fetches.count == 1 && fetches.first?.ifNoneMatch != nil && fetches.first?.status == 304
        report.add(.init(section: "poll", name: "launch with an unchanged service: flag requests", value: Double(fetches.count), unit: "count",
                         budget: "= 1, conditional, 304", passed: conditional))
        report.add(.init(section: "poll", name: "launch with an unchanged service: decodes", value: Double(endpoint.decodes), unit: "count",
                         budget: "= 0", passed: endpoint.decodes == 0))
        let written = FileStamp(path: file.path) != stamp
        report.add(.init(section: "poll", name: "launch with an unchanged service: fallback file rewritten", value: written ? 1 : 0, unit: "count",
                         budget: "= 0", passed: !written))
        report.add(.init(section: "poll", name: "launch with an unchanged service: change stream open", value: Double(provider.openStreamCount), unit: "count",
                         budget: "= 1", passed: provider.openStreamCount == 1))
    }
}
