import FeatureFlags
import Foundation

/// Reads through `any FeatureFlagClient` (a provider serving 1,000 flags) against the floor:
/// a `[String: Bool]` of 1,000 keys behind an `NSLock`, looked up with the same key.
enum ReadBenchmarks {
    static func run(_ report: Report, quick: Bool) throws {
        report.section("Reads — 1,000 flags, through any FeatureFlagClient (a FeatureFlagProvider)")
        let fixture = try ReadFixture()
        defer { fixture.close() }
        let client = fixture.client
        // 64 keys read in turn, the same for floor and candidate: a single key's luck with
        // hash collisions (the hash seed is random per process) would otherwise decide the ratio.
        let boolKeys = (0..<64).map { FlagKey("feature_flag_\($0 * 5)", default: false) }
        let stringKeys = (0..<64).map { FlagKey("feature_flag_\($0 * 5 + 1)", default: "") }
        let missingKeys = (0..<64).map { FlagKey("no_such_flag_\($0)", default: false) }
        let names = boolKeys.map(\.name)
        let lock = NSLock()
        let table = Dictionary(uniqueKeysWithValues: (0..<1_000).map { ("feature_flag_\($0)", $0 % 2 == 0) })
        let operations = quick ? 200_000 : 1_000_000
        let runs = quick ? 7 : 15

        let floorBody: @Sendable (Int) -> Void = { n in
            var hits = 0
            for i in 0..<n {
                lock.lock()
                if table[names[i & 63]] == true { hits += 1 }
                lock.unlock()
            }
            blackHole(hits)
        }
        let floor = Harness.measure(operations: operations, runs: runs, floorBody)
        report.add(.init(section: "reads", name: "floor: NSLock + [String: Bool] lookup", value: floor.median, unit: "ns", spread: floor.spread))

        /// Alternates floor and candidate runs; the ratio is the median of per-pair ratios.
        func compare(_ title: String, budget: Double?, _ body: @escaping (Int) -> Void) {
            let (_, stats, ratio) = Harness.compare(operations: operations, runs: runs, floor: floorBody, candidate: body)
            report.add(
                .init(
                    section: "reads", name: title, value: stats.median, unit: "ns", spread: stats.spread, floor: "floor", ratio: ratio,
                    budget: budget.map { String(format: "≤ %.1f×", $0) }, passed: budget.map { ratio <= $0 }))
        }
        let boolRead: @Sendable (Int) -> Void = { n in
            var hits = 0
            for i in 0..<n where client.value(boolKeys[i & 63]) { hits += 1 }
            blackHole(hits)
        }
        compare("typed Bool read  value(_:)", budget: 1.5, boolRead)
        compare("typed String read", budget: nil) { n in
            var length = 0
            for i in 0..<n { length &+= client.value(stringKeys[i & 63]).utf8.count }
            blackHole(length)
        }
        compare("untyped bool(_:default:)", budget: nil) { n in
            var hits = 0
            for i in 0..<n where client.bool(names[i & 63], default: false) { hits += 1 }
            blackHole(hits)
        }
        compare("missing key (code default)", budget: nil) { n in
            var hits = 0
            for i in 0..<n where client.value(missingKeys[i & 63]) { hits += 1 }
            blackHole(hits)
        }
        compare("details(_:)", budget: nil) { n in
            var reasons = 0
            for i in 0..<n { reasons &+= client.details(boolKeys[i & 63]).reason.rawValue.utf8.count }
            blackHole(reasons)
        }

        // Two threads reading at once: what each reader pays under contention.
        let concurrentOperations = operations / 2
        let floor2 = Harness.measureConcurrent(threads: 2, operations: concurrentOperations, floorBody)
        report.add(.init(section: "reads", name: "floor, 2 threads at once", value: floor2.median, unit: "ns", spread: floor2.spread))
        let read2 = Harness.measureConcurrent(threads: 2, operations: concurrentOperations, boolRead)
        report.add(
            .init(
                section: "reads", name: "typed Bool read, 2 threads at once", value: read2.median, unit: "ns", spread: read2.spread,
                floor: "floor, 2 threads", ratio: read2.median / floor2.median))

        AllocationProbe.run(report)
    }
}

/// A provider serving 1,000 flags from its fallback file, and the keys the benchmarks read.
struct ReadFixture {
    /// The keys every read benchmark uses.
    struct Keys {
        let boolKey = FlagKey("feature_flag_0", default: false)
        let stringKey = FlagKey("feature_flag_1", default: "")
        let missingKey = FlagKey("no_such_flag_here", default: false)
    }

    let directory = temporaryDirectory()
    let provider: FeatureFlagProvider
    var client: any FeatureFlagClient { provider }
    private let keys = Keys()
    var boolKey: FlagKey<Bool> { keys.boolKey }
    var stringKey: FlagKey<String> { keys.stringKey }
    var missingKey: FlagKey<Bool> { keys.missingKey }

    init() throws {
        let context = EvaluationContext(targetingKey: "bench")
        let file = directory.appendingPathComponent("flags.lkg")
        try LastKnownGoodStore(fileURL: file).save(FlagSnapshot(flags: sampleFlags(1_000), version: "bench"), etag: nil, for: context)
        provider = FeatureFlagProvider(
            context: context, fetcher: FlagFetcher(endpoint: JSONFlagEndpoint(post: URL(fileURLWithPath: "/"))),
            store: LastKnownGoodStore(fileURL: file), reachability: AlwaysReachable())
        guard provider.value(boolKey), provider.value(stringKey) == "value-number-1-of-the-sample" else {
            throw BenchmarkError("the sample snapshot did not load")
        }
    }

    func close() {
        provider.shutdown()
        try? FileManager.default.removeItem(at: directory)
    }
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
