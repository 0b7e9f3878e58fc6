import FeatureFlags
import FlagServer
import Foundation

/// Memory held by a client serving 10,000 flags: the growth of resident memory while the
/// client is created, and the Swift heap allocated for it.
enum MemoryBenchmarks {
    static func run(_ report: Report) throws {
        report.section("Memory — a FallbackClient serving 10,000 flags")
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let context = EvaluationContext(targetingKey: "bench")
        let file = directory.appendingPathComponent("flags.lkg")
        try LastKnownGoodStore(fileURL: file).save(FlagSnapshot(flags: sampleFlags(10_000), version: "bench"), etag: nil, for: context)
        let size = try FileIO.read(file.path).count
        guard let before = ProcessMemory.residentBytes() else {
            report.note("resident memory cannot be read on this platform")
            return
        }
        let client = FallbackClient(fileURL: file, context: context)
        blackHole(client.bool("feature_flag_0", default: false))
        let after = ProcessMemory.residentBytes() ?? before
        let grown = Double(max(0, after - before))
        report.add(.init(section: "memory", name: "resident growth for 10,000 flags (file \(size / 1_000) KB)", value: grown, unit: "bytes"))
        report.add(.init(section: "memory", name: "resident growth per flag", value: grown / 10_000, unit: "bytes"))
        withExtendedLifetime(client) {}
    }
}
