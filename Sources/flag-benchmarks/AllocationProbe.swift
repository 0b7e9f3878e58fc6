import ChildProcesses
import FeatureFlags
import Foundation

/// Counts heap allocations on the read path exactly: the benchmark re-runs itself under
/// valgrind (memcheck counts every `malloc`, Swift's allocations included) doing the same
/// setup with 0 and with N reads; the difference divided by N is allocations per read.
/// (A runtime hook on `_swift_allocObject` was tried first: on this Linux runtime replacing
/// the hook corrupts reference counting, so the count comes from outside the process.)
enum AllocationProbe {
    static let reads = 20_000
    static let modes = ["typed Bool": "bool", "typed String": "string", "untyped bool": "untyped", "missing key": "missing", "details(_:)": "details"]

    /// In the parent: runs the probes and reports. Skipped (with a note) without valgrind.
    static func run(_ report: Report) {
        guard let valgrind = findExecutable("valgrind") else {
            report.note("allocations per read not measured: valgrind is not installed")
            return
        }
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        guard let baseline = heapAllocations(valgrind, executable, mode: "bool", reads: 0) else {
            report.note("allocations per read not measured: valgrind gave no heap summary")
            return
        }
        for (title, mode) in modes.sorted(by: { $0.key < $1.key }) {
            guard let total = heapAllocations(valgrind, executable, mode: mode, reads: reads) else { continue }
            let perRead = Double(total - baseline) / Double(reads)
            let budgeted = mode != "details"
            report.add(
                .init(
                    section: "reads", name: "allocations per read: \(title)", value: perRead, unit: "allocs",
                    budget: budgeted ? "= 0" : nil, passed: budgeted ? total == baseline : nil))
        }
    }

    /// In the child (under valgrind): a client serving the read benchmark's 1,000 flags,
    /// then `reads` reads. A `FallbackClient` rather than the provider: the read path is the
    /// same code (`flagValue` → the shared serving state), without the URLSession threads
    /// whose background allocations would blur the count.
    static func child(mode: String, reads: Int) throws {
        let fixture = ReadFixture.Keys()
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let context = EvaluationContext(targetingKey: "bench")
        let file = directory.appendingPathComponent("flags.lkg")
        try LastKnownGoodStore(fileURL: file).save(FlagSnapshot(flags: sampleFlags(1_000), version: "bench"), etag: nil, for: context)
        let client: any FeatureFlagClient = FallbackClient(fileURL: file, context: context)
        // One read of each kind first, in the baseline too: a thread's first read sets up its
        // read cache (one allocation per thread, not per read).
        blackHole(client.value(fixture.boolKey))
        blackHole(client.value(fixture.stringKey))
        blackHole(client.details(fixture.boolKey))
        switch mode {
        case "bool": for _ in 0..<reads { blackHole(client.value(fixture.boolKey)) }
        case "string": for _ in 0..<reads { blackHole(client.value(fixture.stringKey)) }
        case "untyped": for _ in 0..<reads { blackHole(client.bool(fixture.boolKey.name, default: false)) }
        case "missing": for _ in 0..<reads { blackHole(client.value(fixture.missingKey)) }
        case "details": for _ in 0..<reads { blackHole(client.details(fixture.boolKey)) }
        default: throw BenchmarkError("unknown probe mode \(mode)")
        }
    }

    private static func heapAllocations(_ valgrind: String, _ executable: String, mode: String, reads: Int) -> Int? {
        guard let process = try? ChildProcess(
            URL(fileURLWithPath: valgrind), ["--tool=memcheck", "--leak-check=no", executable, "--alloc-child", mode, String(reads)],
            environment: ["SWIFT_DETERMINISTIC_HASHING": "1"], output: .discard)
        else { return nil }
        let text = String(decoding: process.errors!.readDataToEndOfFile(), as: UTF8.self)
        _ = process.waitUntilExit()
        guard let range = text.range(of: #"total heap usage: [\d,]+ allocs"#, options: .regularExpression) else { return nil }
        let digits = text[range].filter(\.isNumber)
        return Int(digits)
    }

    private static func findExecutable(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        return path.split(separator: ":").map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
