import FeatureFlags
import FlagServer
import Foundation

// flag-stress: child processes for the tests that must run apart from the test process.
//
//   flag-stress write FILE --context NAME [--prefix P] [--count N] [--flags K]
//
// Saves snapshots for context NAME with versions P-1, P-2, … (forever unless --count), each
// with K flags, and prints "saved P-i" after each save has returned (written, fsynced,
// renamed). The tests kill it with SIGKILL at random moments, or run two at once.
//
//   flag-stress oversized URL[,URL…] --count N [--trim yes|no]
//
// Fetches N times, from each URL in turn (servers answering more than the 1 MiB cap, one per
// framing), through a provider
// and prints, after each answer's transfer has ended (and, with --trim yes, the default, free
// memory went back to the system), "growth BYTES": this process's resident memory above what it
// was after the first fetch.
// Ends with "refused R" (answers refused as too large). Measured in a process of its own, so
// that no other test's allocations are counted.

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("flag-stress: \(message)\n".utf8))
    exit(64)
}

func say(_ line: String) {
    FileHandle.standardOutput.write(Data("\(line)\n".utf8))
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 2 else {
    fail("usage: flag-stress write FILE --context NAME [--prefix P] [--count N] [--flags K] | oversized URL[,URL…] --count N")
}
var options: [String: String] = [:]
var index = 2
while index + 1 < arguments.count, arguments[index].hasPrefix("--") {
    options[String(arguments[index].dropFirst(2))] = arguments[index + 1]
    index += 2
}
switch arguments[0] {
case "write":
    StressWriter.run(file: URL(fileURLWithPath: arguments[1]), options: options)
case "oversized":
    let urls = arguments[1].split(separator: ",").compactMap { URL(string: String($0)) }
    guard !urls.isEmpty else { fail("no URL in \(arguments[1])") }
    let trim = options["trim"] != "no"
    guard await OversizedProbe.run(urls: urls, count: options["count"].flatMap(Int.init) ?? 10, returningFreeMemory: trim, say: say) else {
        fail("resident memory cannot be read here")
    }
default:
    fail("unknown mode \(arguments[0])")
}
