import Foundation

// flag-benchmarks: the performance budgets (Docs/Performance.md), measured as ratios to floors taken in the same
// run. `swift run -c release flag-benchmarks [--json] [--check] [--quick]`.

// The allocation probe re-runs this executable under valgrind in this mode.
if CommandLine.arguments.count == 4, CommandLine.arguments[1] == "--alloc-child" {
    do {
        try AllocationProbe.child(mode: CommandLine.arguments[2], reads: Int(CommandLine.arguments[3]) ?? 0)
        exit(0)
    } catch {
        print("flag-benchmarks: \(error)")
        exit(1)
    }
}

let arguments = Set(CommandLine.arguments.dropFirst())
let unknown = arguments.subtracting(["--json", "--check", "--quick", "--help", "-h"])
if arguments.contains("--help") || arguments.contains("-h") || !unknown.isEmpty {
    if !unknown.isEmpty { print("flag-benchmarks: unknown option \(unknown.sorted().joined(separator: ", "))") }
    print("""
        USAGE: swift run -c release flag-benchmarks [--json] [--check] [--quick]
          --json   one JSON line per figure
          --check  exit 1 if a budget is missed
          --quick  fewer runs (a smoke test; figures are noisier)
        """)
    exit(unknown.isEmpty ? 0 : 64)
}
#if DEBUG
print("flag-benchmarks: this is a debug build; run it with -c release for meaningful figures")
#endif

// The server benchmarks' clients write to connections the server may already have closed.
signal(SIGPIPE, SIG_IGN)

let report = Report(json: arguments.contains("--json"))
let quick = arguments.contains("--quick")
let started = Date()
do {
    try ReadBenchmarks.run(report, quick: quick)
    try StartupBenchmarks.run(report, quick: quick)
    try PolicyBenchmarks.run(report, quick: quick)
    try await PollBenchmarks.run(report, quick: quick)
    try MemoryBenchmarks.run(report)
    try ServerBenchmarks.run(report, quick: quick)
    try SlowClientBenchmarks.run(report, quick: quick)
    try StreamBenchmarks.run(report, quick: quick)
    try await KillPathBenchmarks.run(report, quick: quick)
} catch {
    print("flag-benchmarks: \(error)")
    exit(1)
}
let missed = report.missed
if !report.json {
    print("")
    print(missed.isEmpty ? "all budgets met" : "budgets missed: " + missed.map(\.name).joined(separator: "; "))
    print(String(format: "ran in %.1f s", Date().timeIntervalSince(started)))
}
exit(arguments.contains("--check") && !missed.isEmpty ? 1 : 0)
