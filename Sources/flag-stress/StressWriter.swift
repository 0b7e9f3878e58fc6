import FeatureFlags
import Foundation

/// `flag-stress write`: saves snapshots to a fallback file as fast as it can.
enum StressWriter {
    static func run(file: URL, options: [String: String]) {
        guard let contextName = options["context"] else { fail("--context is required") }
        let prefix = options["prefix"] ?? contextName
        let count = options["count"].flatMap(Int.init) ?? Int.max
        let flagCount = options["flags"].flatMap(Int.init) ?? 100
        let context = EvaluationContext(targetingKey: contextName)
        let store = LastKnownGoodStore(fileURL: file)
        var i = 0
        while i < count {
            i += 1
            var flags: [String: FlagValue] = [:]
            for f in 0..<flagCount { flags["flag_\(f)"] = .int(i * 1_000 + f) }
            let version = "\(prefix)-\(i)"
            do {
                try store.save(FlagSnapshot(values: flags, version: version), etag: nil, for: context)
            } catch {
                fail("save \(version) failed: \(error)")
            }
            say("saved \(version)")
        }
    }
}
