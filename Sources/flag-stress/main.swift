import FeatureFlags
import Foundation

// flag-stress: a writer for crash and contention tests of the fallback file.
//
//   flag-stress write FILE --context NAME [--prefix P] [--count N] [--flags K]
//
// Saves snapshots for context NAME with versions P-1, P-2, … (forever unless --count), each
// with K flags, and prints "saved P-i" after each save has returned (written, fsynced,
// renamed). The tests kill it with SIGKILL at random moments, or run two at once.

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("flag-stress: \(message)\n".utf8))
    exit(64)
}

var arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 2, arguments[0] == "write" else {
    fail("usage: flag-stress write FILE --context NAME [--prefix P] [--count N] [--flags K]")
}
let file = URL(fileURLWithPath: arguments[1])
var options: [String: String] = [:]
var index = 2
while index + 1 < arguments.count, arguments[index].hasPrefix("--") {
    options[String(arguments[index].dropFirst(2))] = arguments[index + 1]
    index += 2
}
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
    FileHandle.standardOutput.write(Data("saved \(version)\n".utf8))
}
