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

if CommandLine.arguments.count == 5, CommandLine.arguments[1] == "--oversized-child" {
    await OversizedBenchmarks.child(
        urls: CommandLine.arguments[2], count: Int(CommandLine.arguments[3]) ?? 10, returningFreeMemory: CommandLine.arguments[4] == "trim")
}
if CommandLine.arguments.count == 5, CommandLine.arguments[1] == "--plain-child" {
    await OversizedBenchmarks.child(
        urls: CommandLine.arguments[2], count: Int(CommandLine.arguments[3]) ?? 10, returningFreeMemory: CommandLine.arguments[4] == "trim",
        plain: true)
}
// For profilers: `--init-loop FLAGS N` starts a provider on a store of FLAGS flags and reads, N times.
if CommandLine.arguments.count == 4, CommandLine.arguments[1] == "--init-loop" {
    try InitBenchmarks.profileLoop(flags: Int(CommandLine.arguments[2]) ?? 100, starts: Int(CommandLine.arguments[3]) ?? 1)
    exit(0)
}
if CommandLine.arguments.count == 3, CommandLine.arguments[1] == "--init-child" {
    InitBenchmarks.child(file: CommandLine.arguments[2])
    exit(0)
}
if CommandLine.arguments.count == 3, CommandLine.arguments[1] == "--init-floor-child" {
    InitBenchmarks.floorChild(file: CommandLine.arguments[2])
    exit(0)
}

let sections = ["reads", "init", "startup", "policy", "local", "signing", "poll", "oversized", "memory", "server", "slow-clients", "streams", "kill-path"]
let only = CommandLine.arguments.dropFirst().first { $0.hasPrefix("--only=") }.map { Set($0.dropFirst(7).split(separator: ",").map(String.init)) }
let arguments = Set(CommandLine.arguments.dropFirst().filter { !$0.hasPrefix("--only=") })
var unknown = arguments.subtracting(["--json", "--check", "--quick", "--help", "-h"])
if let only { unknown.formUnion(only.subtracting(sections).map { "--only=\($0)" }) }
if arguments.contains("--help") || arguments.contains("-h") || !unknown.isEmpty {
    if !unknown.isEmpty { print("flag-benchmarks: unknown option \(unknown.sorted().joined(separator: ", "))") }
    print("""
        USAGE: swift run -c release flag-benchmarks [--json] [--check] [--quick] [--only=SECTION,…]
          --json   one JSON line per figure
          --check  exit 1 if a budget is missed
          --quick  fewer runs (a smoke test; figures are noisier)
          --only   run these sections: \(sections.joined(separator: ", "))
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
    func wanted(_ section: String) -> Bool { only?.contains(section) ?? true }
    if wanted("reads") { try ReadBenchmarks.run(report, quick: quick) }
    if wanted("init") { try InitBenchmarks.run(report, quick: quick) }
    if wanted("startup") { try StartupBenchmarks.run(report, quick: quick) }
    if wanted("policy") { try PolicyBenchmarks.run(report, quick: quick) }
    if wanted("local") { try await LocalEvaluationBenchmarks.run(report, quick: quick) }
    if wanted("signing") { try SigningBenchmarks.run(report, quick: quick) }
    if wanted("poll") { try await PollBenchmarks.run(report, quick: quick) }
    if wanted("oversized") { try OversizedBenchmarks.run(report, quick: quick) }
    if wanted("memory") { try MemoryBenchmarks.run(report) }
    if wanted("server") { try ServerBenchmarks.run(report, quick: quick) }
    if wanted("slow-clients") { try SlowClientBenchmarks.run(report, quick: quick) }
    if wanted("streams") { try StreamBenchmarks.run(report, quick: quick) }
    if wanted("kill-path") { try await KillPathBenchmarks.run(report, quick: quick) }
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
