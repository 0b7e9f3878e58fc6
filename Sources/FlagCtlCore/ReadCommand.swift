import FeatureFlags
import FeatureFlagsSigning
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
            .init(
                name: "provider", value: "NAME",
                help: "read as the app's fetcher of this wire format reads it (\(EndpointChoice.names.joined(separator: ", "))): flagd evaluates the held rules for the context"),
            .init(name: "bucketing", value: "MODE", help: "flagd: how fractional buckets — string (default), cbor or legacy-percent"),
            .init(
                name: "trust", value: "PUB.pem",
                help: "serve only what this key signed, as the app checks it (kid: the file's name, or ID=PUB.pem)", repeatable: true),
            .init(name: "json", value: nil, help: "print JSON lines"),
        ],
        examples: [
            "flagctl read --state ~/.flags",
            "flagctl read --state /path/to/group/container --context venue=venue-42 --json",
            "flagctl read --state ~/.flags --trust ops-2026=ops.pub.pem",
            "flagctl read --state ~/.flags --provider flagd --context targetingKey=u1",
        ],
        exitStatuses: [
            (0, "values printed"), (64, "usage error"),
            (66, "no fallback file there, or it could not be used (with --trust: nothing in it verifies)"),
        ])

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
        let (endpoints, keys) = try reading(arguments)
        let client = FallbackClient(fileURL: file, context: context, endpoints: endpoints, trustedKeys: keys)
        defer { client.shutdown() }
        let problems = client.recentEvents.compactMap { event -> String? in
            switch event.kind {
            case .fallbackRejected, .fallbackWarning: return Formatting.printable(event.message ?? "-")
            case .fallbackTampered: return "not served: \(Formatting.printable(event.message ?? "-"))"
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

    /// The app's endpoint and trusted keys as far as reading needs them (`--provider`,
    /// `--bucketing`, `--trust`): the wire format decodes stored signed answers and evaluates
    /// held flagd rules; nothing is fetched, so its URL and credentials are placeholders. None
    /// without those options.
    static func reading(_ arguments: ParsedArguments) throws -> (endpoints: [FlagEndpoint], trustedKeys: [String: String]) {
        let name = arguments.value("provider")
        let keys = try SigningCommands.trustedKeys(arguments)
        let bucketing = try EndpointChoice.bucketing(arguments.value("bucketing"))
        guard name != nil || !keys.isEmpty || bucketing != nil else { return ([], [:]) }
        let placeholders = EndpointChoice.Credentials(key: "flagctl-read", project: "0", appID: "0", appName: "flagctl")
        let endpoint = try EndpointChoice.make(name ?? "json", url: "http://127.0.0.1:9/", credentials: placeholders, bucketing: bucketing)
        return ([endpoint], keys)
    }
}
