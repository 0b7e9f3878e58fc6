import ChildProcesses
import FeatureFlags
import FeatureFlagsServices
import Foundation

/// Provider start: the store read from its file, the fetcher and the provider built, the first
/// flag read — warm (repeated in this process) and cold (the first in a fresh process), against
/// the floor of reading the file's bytes and building a dictionary of the same flags.
enum InitBenchmarks {
    static func run(_ report: Report, quick: Bool) throws {
        report.section("Provider start — store, fetcher, provider and the first read (page cache warm)")
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for count in [100, 1_000] {
            let file = try writeStore(count, in: directory)
            let label = count == 100 ? "100" : "1,000"
            let pairs = sampleFlags(count).map { ($0.key, $0.value.value ?? .null) }

            let floor = Harness.measure(operations: 1, runs: quick ? 51 : 201, warmup: 20) { _ in
                let bytes = try? FileIO.read(file.path)
                let table = Dictionary(pairs, uniquingKeysWith: { first, _ in first })
                blackHole((bytes, table))
            }
            report.add(
                .init(
                    section: "init", name: "floor: read the \(label)-flag file + build a dictionary", value: floor.median / 1_000, unit: "µs",
                    spread: floor.spread))

            let warm = warmStarts(file: file, runs: quick ? 51 : 201, warmup: 20)
            // The budget is 50 µs on the reference machine, i.e. 15× the floor: the ratio is what
            // travels between machines (and between runs of a shared one), so the ratio is checked.
            let warmRatio = warm.median / floor.median
            let warmBudgeted = count == 100
            report.add(
                .init(
                    section: "init", name: "provider start + first read, \(label) flags, warm", value: warm.median / 1_000, unit: "µs",
                    spread: warm.spread, floor: "floor", ratio: warmRatio, budget: warmBudgeted ? "≤ 15× (50 µs)" : nil,
                    passed: warmBudgeted ? warmRatio <= 15 : nil))

            let (coldFloor, cold, coldRatio) = try coldStarts(file: file, runs: quick ? 21 : 41)
            report.add(
                .init(
                    section: "init", name: "cold floor: the same in a fresh process", value: coldFloor.median / 1_000, unit: "µs",
                    spread: coldFloor.spread))
            // A ratio to the floor measured in the same run, not a time: the ratio is what
            // travels between machines and between runs of a shared one. It is the median of
            // the pairs' ratios (see `coldStarts`), so it need not equal the medians' ratio.
            let coldBudgeted = count == 1_000
            report.add(
                .init(
                    section: "init", name: "provider start + first read, \(label) flags, cold", value: cold.median / 1_000, unit: "µs",
                    spread: cold.spread, floor: "cold floor", ratio: coldRatio,
                    budget: coldBudgeted ? "≤ 1.5×" : nil, passed: coldBudgeted ? coldRatio <= 1.5 : nil))
        }
    }

    /// A store file holding `count` flags for the benchmark's context.
    static func writeStore(_ count: Int, in directory: URL) throws -> URL {
        let file = directory.appendingPathComponent("start-\(count).lkg")
        try LastKnownGoodStore(fileURL: file).save(FlagSnapshot(flags: sampleFlags(count), version: "bench"), etag: nil, for: context)
        return file
    }

    static let context = EvaluationContext(targetingKey: "bench")

    /// What an app does at launch: the store, the fetcher, the provider, one read. The caller
    /// shuts the provider down after its clock stops.
    @inline(never)
    static func startAndRead(_ file: URL) -> (Bool, FeatureFlagProvider) {
        let store = LastKnownGoodStore(fileURL: file)
        let fetcher = FlagFetcher(endpoint: .ofrep(baseURL: URL(string: "https://flags.example.com")!))
        let provider = FeatureFlagProvider(context: context, fetcher: fetcher, store: store)
        return (provider.value(FlagKey("feature_flag_0", default: false)), provider)
    }

    /// Starts timed one by one, each provider shut down after its clock stopped.
    private static func warmStarts(file: URL, runs: Int, warmup: Int) -> Harness.Stats {
        var samples: [Double] = []
        for run in 0..<(warmup + runs) {
            let start = DispatchTime.now().uptimeNanoseconds
            let (on, provider) = startAndRead(file)
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start)
            blackHole(on)
            provider.shutdown()
            if run >= warmup { samples.append(elapsed) }
        }
        return Harness.stats(samples, runs)
    }

    /// `runs` fresh processes of each kind, each timing its own first start (see
    /// ``child(file:)``) or its floor (``floorChild(file:)``). The two kinds alternate, and the
    /// ratio is the median of each pair's ratio: a machine whose speed drifts during the run (a
    /// shared one does, for seconds at a time) moves both halves of a pair alike, and a slow
    /// phase spoils only the pairs inside it.
    private static func coldStarts(file: URL, runs: Int) throws -> (floor: Harness.Stats, start: Harness.Stats, ratio: Double) {
        var floors: [Double] = []
        var starts: [Double] = []
        for _ in 0..<runs {
            floors.append(try coldChild(file: file, mode: "--init-floor-child"))
            starts.append(try coldChild(file: file, mode: "--init-child"))
        }
        return (Harness.stats(floors, runs), Harness.stats(starts, runs), Harness.medianRatio(starts, over: floors))
    }

    /// One fresh process in `mode`: the nanoseconds it printed.
    private static func coldChild(file: URL, mode: String) throws -> Double {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let process = try ChildProcess(executable, [mode, file.path], errors: .discard)
        let text = String(decoding: process.output!.readDataToEndOfFile(), as: UTF8.self)
        guard process.waitUntilExit().succeeded, let nanoseconds = Double(text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw BenchmarkError("the cold-start child failed: \(text)")
        }
        return nanoseconds
    }

    /// `starts` starts on a store of `flags` flags, for a profiler. With 0 starts, writes the
    /// store, prints its path and keeps it (for profiling `--init-child PATH`).
    static func profileLoop(flags: Int, starts: Int) throws {
        let directory = temporaryDirectory()
        let file = try writeStore(flags, in: directory)
        if starts == 0 {
            print(file.path)
            return
        }
        defer { try? FileManager.default.removeItem(at: directory) }
        for _ in 0..<starts {
            let (on, provider) = startAndRead(file)
            blackHole(on)
            provider.shutdown()
        }
    }

    /// In a fresh process: times the floor — the file's bytes read and a dictionary of as many
    /// flags built, its names made from UTF-8 bytes as a decoder makes them — prints nanoseconds.
    static func floorChild(file: String) {
        // The flag count is in the file's name (start-COUNT.lkg); the names' bytes are made before
        // the clock starts, as a decoder finds them in the file.
        let count = Int(file.split(separator: "-").last?.split(separator: ".").first ?? "") ?? 0
        let names = (0..<count).map { Array("feature_flag_\($0)".utf8) }
        let start = DispatchTime.now().uptimeNanoseconds
        let bytes = try? FileIO.read(file)
        var table: [String: FlagValue] = [:]
        table.reserveCapacity(count)
        for (index, name) in names.enumerated() { table[String(decoding: name, as: UTF8.self)] = .int(index) }
        let elapsed = DispatchTime.now().uptimeNanoseconds - start
        blackHole((bytes, table))
        print(elapsed)
    }

    /// In a fresh process: times the first start and read, prints nanoseconds.
    static func child(file: String) {
        let url = URL(fileURLWithPath: file)
        // The app's context exists before the provider is built: not part of the start.
        blackHole(context)
        let start = DispatchTime.now().uptimeNanoseconds
        let (on, provider) = startAndRead(url)
        let elapsed = DispatchTime.now().uptimeNanoseconds - start
        blackHole(on)
        provider.shutdown()
        print(elapsed)
    }
}
