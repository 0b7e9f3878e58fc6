import FeatureFlags
import FeatureFlagsFlagd
import Foundation

/// Local evaluation: flagd rules for 1,000 flags, evaluated for one context, and an identify
/// with held rules up to the first read.
enum LocalEvaluationBenchmarks {
    static func run(_ report: Report, quick: Bool) async throws {
        report.section("Local evaluation — flagd rules for 1,000 flags")
        let runs = quick ? 7 : 25
        let document = rules(1_000)
        let definitions = try FlagdDefinitions.parse(document)
        guard definitions.problems.isEmpty else { throw BenchmarkError("the sample rules have problems: \(definitions.problems[0])") }
        let context = EvaluationContext(
            targetingKey: "user-42", attributes: ["venue": "venue-7", "app_version": "2.3.1", "email": "ana@example.com"])

        let decode = Harness.measure(operations: 1, runs: runs) { _ in blackHole(try? FlagJSON.parse(document)) }
        report.add(.init(section: "local", name: "floor: decode the rules document (JSON)", value: decode.median / 1_000, unit: "µs", spread: decode.spread))

        let compile = Harness.measure(operations: 1, runs: runs) { _ in blackHole(try? FlagdDefinitions.parse(document)) }
        report.add(
            .init(
                section: "local", name: "parse and compile the rules", value: compile.median / 1_000, unit: "µs", spread: compile.spread,
                floor: "decode", ratio: compile.median / decode.median))

        let now = Date(timeIntervalSince1970: 1_750_000_000)
        let evaluate = Harness.measure(operations: 1, runs: runs) { _ in blackHole(definitions.evaluate(for: context, at: now)) }
        report.add(
            .init(
                section: "local", name: "evaluate 1,000 flags for one context", value: evaluate.median / 1_000, unit: "µs",
                spread: evaluate.spread, floor: "decode", ratio: evaluate.median / decode.median,
                budget: "< decode", passed: evaluate.median < decode.median))

        // A provider holding the rules (as after a fetch): identify to a new context, then read.
        // Measured on several providers, each with rules parsed and held anew: on this machine
        // one allocation of the same rules runs identify up to 1.8× slower than another, in the
        // same process and uniformly across the profile (placement, not code), so one setup's
        // median is a draw of that lottery. The row is the median of all setups' samples.
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ff-bench-local-\(getpid())")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let setups = quick ? 3 : 7
        var samples: [Double] = []
        var setupMedians: [Double] = []
        for setup in 0..<setups {
            let store = LastKnownGoodStore(fileURL: directory.appendingPathComponent("flags-\(setup).lkg"))
            let endpoint = FlagEndpoint.flagd(url: URL(string: "http://127.0.0.1:9/flagd/flags.json")!)
            let response = FlagResponse(status: 200, headers: ["ETag": "\"r1\""], body: document)
            let fetcher = FlagFetcher(endpoint: endpoint, transport: CannedTransport(response: response))
            guard case .fetched(let snapshot, let etag, _) = await fetcher.fetch(context) else { throw BenchmarkError("the rules were not fetched") }
            try store.save(snapshot, etag: etag, for: context)
            let provider = FeatureFlagProvider(context: context, fetcher: fetcher, store: store, reachability: AlwaysReachable())
            defer { provider.shutdown() }
            let key = FlagKey("flag-1", default: false)
            var n = 0
            let own = Harness.samples(runs: quick ? 7 : 15, warmup: 3) {
                n += 1
                provider.identify(EvaluationContext(targetingKey: "user-\(n)", attributes: ["venue": .string("venue-\(n % 20)")]))
                blackHole(provider.value(key))
            }
            guard provider.details(key).reason != .cached else { throw BenchmarkError("identify did not evaluate the held rules") }
            samples += own
            setupMedians.append(Harness.stats(own, own.count).median)
        }
        let identify = Harness.stats(samples, samples.count)
        let medians = setupMedians.map { String(Int(($0 / 1_000).rounded())) }.joined(separator: ", ")
        // The budget was 0.5 ms on the reference machine, where the decode floor is about 2.5 ms:
        // 0.2× the floor measured in this run, so a slow machine or a slow phase moves both.
        let identifyRatio = identify.median / decode.median
        report.add(
            .init(
                section: "local", name: "identify → first read, 1,000 local flags", value: identify.median / 1_000, unit: "µs",
                spread: identify.spread, floor: "decode", ratio: identifyRatio, budget: "≤ 0.2× decode (0.5 ms)",
                passed: identifyRatio <= 0.2))
        report.note("identify medians per setup (µs): \(medians)")
    }

    /// 1,000 flags with typical targeting: 40 % static, 30 % venue lists, 15 % fractional
    /// rollouts, 10 % app-version checks, 5 % a shared staff rule.
    static func rules(_ count: Int) -> [UInt8] {
        var flags: [String: FlagValue] = [:]
        for i in 0..<count {
            var flag: [String: FlagValue] = ["state": "ENABLED", "variants": ["on": true, "off": false], "defaultVariant": "off"]
            switch i % 20 {
            case 0..<8: break
            case 8..<14:
                flag["targeting"] = ["if": [["in": [["var": "venue"], [.string("venue-\(i % 7)"), .string("venue-\(i % 11)"), .string("venue-\(i % 13)")]]], "on"]]
            case 14..<17:
                flag["targeting"] = ["fractional": [["on", .int(i % 100)], ["off", .int(100 - i % 100)]]]
            case 17..<19:
                flag["targeting"] = ["if": [["sem_ver": [["var": "app_version"], ">=", .string("2.\(i % 5).0")]], "on", "off"]]
            default:
                flag["targeting"] = ["if": [["$ref": "staff"], "on", .null]]
            }
            flags["flag-\(i)"] = .object(flag)
        }
        let document: FlagValue = [
            "flags": .object(flags), "$evaluators": ["staff": ["ends_with": [["var": "email"], "@example.com"]]],
            "metadata": ["version": "bench"],
        ]
        return FlagJSON.bytes(document)
    }
}

/// Answers every request with one response (no network).
private struct CannedTransport: FlagTransport {
    let response: FlagResponse
    func send(_ request: FlagRequest, maxBytes: Int, timeout: TimeInterval) async throws(FetchError) -> FlagResponse { response }
    func shutdown() {}
}
