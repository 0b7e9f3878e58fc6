import FeatureFlags
import Foundation

/// `flagctl read`: what a fallback file serves, read as an app extension or a widget reads
/// it — through the offline client, with no network. For checking a device's or a shared
/// container's store, and the second process of the App Group rehearsal.
enum ReadCommand {
    static let spec = CommandSpec(
        name: "read", summary: "print what a fallback file serves, offline, as an app extension reads it",
        positionals: [],
        options: [
            .init(name: "state", value: "DIR", help: "the directory holding flags.lkg (required)"),
            .init(name: "file", value: "NAME", help: "the fallback file's name in DIR (default flags.lkg)"),
            .init(name: "context", value: "KEY=VALUE", help: "read this context's values (default: the most recently used)", repeatable: true),
            .init(name: "json", value: nil, help: "print JSON lines"),
        ],
        examples: [
            "flagctl read --state ~/.flags",
            "flagctl read --state /path/to/group/container --context venue=venue-42 --json",
        ],
        exitStatuses: [(0, "values printed"), (64, "usage error"), (66, "no fallback file there, or it could not be used")])

    static let exitNoInput: Int32 = 66

    static func run(_ arguments: ParsedArguments, console: Console) throws -> Int32 {
        guard let state = arguments.value("state") else {
            throw UsageError(message: "--state DIR is required: the directory holding the fallback file")
        }
        let file = URL(fileURLWithPath: (state as NSString).expandingTildeInPath)
            .appendingPathComponent(arguments.value("file") ?? "flags.lkg")
        guard FileManager.default.fileExists(atPath: file.path) else {
            console.err("flagctl read: no fallback file at \(file.path)")
            return exitNoInput
        }
        let pairs = arguments.all("context")
        let context = pairs.isEmpty ? nil : try Formatting.context(pairs)
        let client = FallbackClient(fileURL: file, context: context)
        defer { client.shutdown() }
        let problems = client.recentEvents.compactMap { event -> String? in
            switch event.kind {
            case .fallbackRejected, .fallbackWarning: return Formatting.printable(event.message ?? "-")
            default: return nil
            }
        }
        for problem in problems { console.err("flagctl read: \(problem)") }
        let names = Formatting.flagNames(client)
        let held = client.store.fingerprints
        if arguments.has("json") {
            console.out(
                Formatting.json([
                    "file": .string(file.path), "contexts": .int(held.count), "flags": .int(names.count),
                    "kill_switch": .bool(client.isKillSwitchActive), "problems": .list(problems.map(FlagValue.string)),
                ]))
            for name in names { console.out(Formatting.json(Formatting.describe(name, in: client))) }
        } else {
            let kill = client.isKillSwitchActive ? " · KILL SWITCH ON: every flag reads its safe default" : ""
            console.out("\(file.path) · \(held.count) context\(held.count == 1 ? "" : "s") stored · \(names.count) flag\(names.count == 1 ? "" : "s")\(kill)")
            for line in Formatting.flagTable(names, in: client) { console.out(line) }
            if names.isEmpty { console.out("(no flags stored for this context)") }
        }
        return problems.isEmpty || !names.isEmpty ? 0 : exitNoInput
    }
}
