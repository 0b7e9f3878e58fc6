import FeatureFlags
import FeatureFlagsSigning
import Foundation

/// `flagctl eval`: one real provider cycle for one context — the fallback file first, then
/// the endpoint within the timeout — and every flag with where its value came from.
enum EvalCommand {
    static let spec = CommandSpec(
        name: "eval", summary: "evaluate every flag for a context, falling back to the last good values",
        positionals: [],
        options: [
            .init(
                name: "endpoint", value: "URL",
                help: "the flag endpoint (required; for ofrep, else OFREP_ENDPOINT); again for a set of services", repeatable: true),
            .strategy,
            .init(name: "provider", value: "NAME", help: "wire format: \(EndpointChoice.names.joined(separator: ", ")) (default json)"),
            .method,
            .init(name: "context", value: "KEY=VALUE", help: "one context attribute; targetingKey=… sets the key", repeatable: true),
            .init(name: "header", value: "'NAME: VALUE'", help: "an extra request header, e.g. authorisation", repeatable: true),
            .init(name: "key", value: "SECRET", help: "launchdarkly mobile key, firebase API key, unleash frontend key"),
            .init(name: "project", value: "ID", help: "firebase: the project number"),
            .init(name: "app-id", value: "ID", help: "firebase: the app id (1:…:ios:…)"),
            .init(name: "app-name", value: "NAME", help: "unleash: the application name"),
            .init(name: "bucketing", value: "MODE", help: "flagd: how fractional buckets — string (default), cbor or legacy-percent"),
            .init(name: "state", value: "DIR", help: "keep the fallback file here (default: a temporary directory)"),
            .init(name: "schema", value: "FILE", help: "validate the payload first; a failing one is rejected and the fallback kept"),
            .timeout,
            .init(name: "allow-http", value: nil, help: "allow plain HTTP to hosts that are not loopback"),
            SigningCommands.trustOption,
            .init(name: "json", value: nil, help: "print JSON lines instead of a table"),
        ],
        examples: [
            "flagctl eval --endpoint http://127.0.0.1:8080/flags --context targetingKey=u1 --context venue=venue-42",
            "flagctl eval --endpoint 'https://cdn.example.com/flags/{venue}.json' --context venue=venue-42 --state ~/.flags",
            "flagctl eval --provider ofrep --endpoint https://flags.example.com --header 'Authorization: Bearer …'",
            "OFREP_ENDPOINT=https://flags.example.com OFREP_HEADERS='Authorization=Bearer%20…' flagctl eval --provider ofrep",
            "flagctl eval --endpoint http://127.0.0.1:8080/flags --schema flags.schema.json --state ~/.flags",
            "flagctl eval --provider launchdarkly --endpoint https://clientsdk.launchdarkly.com --key mob-… --context targetingKey=u1",
            "flagctl eval --provider flagd --bucketing cbor --endpoint http://127.0.0.1:8080/flagd/flags.json --context targetingKey=u1",
            "flagctl eval --method get --endpoint https://a.example.com/flags.json --endpoint https://b.example.com/flags.json --strategy first-match",
        ],
        exitStatuses: [
            (0, "flags printed: fetched, or served from the fallback because the network or the payload failed (the status line says which)"),
            (64, "usage error"),
            (65, "the --schema file is not a valid schema"),
            (66, "the --schema file cannot be read"),
            (exitSaveFailed, "fetched, but the fallback file could not be written (read-only, full, locked, or not a file)"),
            (exitFatal, "FATAL: credentials refused (401/403) or plain HTTP refused; nothing will be fetched until that changes"),
        ])

    /// FATAL: `EX_NOPERM`.
    static let exitFatal: Int32 = 77
    /// The fetched values could not be saved: `EX_IOERR`.
    static let exitSaveFailed: Int32 = 74

    static func run(_ arguments: ParsedArguments, console: Console) async throws -> Int32 {
        let (endpointURL, headers, budget) = try EndpointChoice.connection(
            arguments, provider: arguments.value("provider") ?? "json", command: "eval", console: console)
        let credentials = EndpointChoice.Credentials(
            key: arguments.value("key"), project: arguments.value("project"), appID: arguments.value("app-id"),
            appName: arguments.value("app-name"), method: arguments.value("method"))
        let (endpoints, strategy) = try EndpointChoice.services(
            arguments, format: arguments.value("provider") ?? "json", url: endpointURL, credentials: credentials,
            bucketing: try EndpointChoice.bucketing(arguments.value("bucketing")))
        let context = try Formatting.context(arguments.all("context"))
        var schema: FlagSchema?
        if let schemaFile = arguments.value("schema") {
            switch SchemaFile.load(schemaFile, command: "eval", console: console) {
            case .success(let loaded): schema = loaded
            case .failure(let status): return status.code
            }
        }
        let stateDirectory = arguments.value("state").map { URL(fileURLWithPath: ($0 as NSString).expandingTildeInPath) }
        let directory = stateDirectory ?? TemporaryDirectories.make("flagctl-eval")
        defer { if stateDirectory == nil { TemporaryDirectories.remove(directory) } }

        let store = LastKnownGoodStore(fileURL: directory.appendingPathComponent("flags.lkg"))
        var fetch = FlagFetcher.Configuration(
            budget: budget, allowInsecureHTTP: arguments.has("allow-http"), headers: headers,
            trustedKeys: try SigningCommands.trustedKeys(arguments))
        fetch.strategy = strategy
        let fetcher = FlagFetcher(endpoints: endpoints, configuration: fetch)
        let provider = FeatureFlagProvider(
            context: context, fetcher: fetcher, store: store, configuration: .init(schema: schema),
            reachability: AlwaysReachable())
        defer { provider.shutdown() }
        let outcome = await provider.refresh()
        let summary = describe(outcome)
        let names = Formatting.flagNames(provider)
        // What went wrong with the fallback file: never hidden behind a success.
        let problems = provider.recentEvents.compactMap { event -> String? in
            switch event.kind {
            case .fallbackWriteFailed: return "not saved to \(store.fileURL.path): \(Formatting.printable(event.message ?? "-"))"
            case .fallbackRejected:
                let place = event.keptAt.map { " (kept at \($0))" } ?? ""
                return "the fallback file was not used: \(Formatting.printable(event.message ?? "-"))\(place)"
            case .fallbackWarning: return "warning: \(Formatting.printable(event.message ?? "-"))"
            default: return nil
            }
        }
        for problem in problems { console.err("flagctl eval: \(problem)") }
        if case .failed(let error) = outcome, let status = error.httpStatus, [403, 405, 501].contains(status),
            (arguments.value("provider") ?? "json") == "json", arguments.value("method") == nil, !endpointURL.contains("{")
        {
            console.err("flagctl eval: hint: the context was POSTed; a static host refuses that — for a static document add --method get")
        }
        if arguments.has("json") {
            console.out(
                Formatting.json([
                    "status": .string(provider.status.rawValue), "source": .string(provider.labels.source.rawValue),
                    "kill_switch": .bool(provider.isKillSwitchActive), "missing_flags_off": .bool(provider.snapshot.missingFlagsAreOff),
                    "outcome": .string(summary), "context": .string(context.fingerprint), "flags": .int(names.count),
                    "problems": .list(problems.map(FlagValue.string)),
                ]))
            for name in names { console.out(Formatting.json(Formatting.describe(name, in: provider))) }
            for event in provider.recentEvents where event.kind == .servicesDisagree {
                console.out(Formatting.json([
                    "mismatch": .string(event.flag ?? "-"),
                    "values": .object(event.serviceValues ?? [:]),
                ]))
            }
        } else {
            let kill = provider.isKillSwitchActive ? " · KILL SWITCH ON: every flag reads its safe default" : ""
            console.out("status \(provider.status.rawValue) · \(provider.labels.source.rawValue) · \(summary)\(kill)")
            console.out("context \(context.fingerprint) · \(names.count) flags · fallback file \(store.fileURL.path)")
            for line in Formatting.flagTable(names, in: provider) { console.out(line) }
            for line in Formatting.disagreements(provider.recentEvents) { console.out(line) }
            if provider.status == .error, let last = provider.recentEvents.last(where: { $0.kind == .error }) {
                console.out("(\(Formatting.printable(last.message ?? "-")))")
            }
            if provider.snapshot.missingFlagsAreOff {
                console.out("(the service leaves disabled flags out: a flag not listed reads false)")
            }
            if names.isEmpty {
                console.out(
                    problems.isEmpty
                        ? "(no flags: nothing fetched and nothing stored for this context)"
                        : "(no flags: nothing fetched, and the fallback file could not be used — see above)")
            }
        }
        if provider.status == .fatal { return exitFatal }
        if provider.recentEvents.contains(where: { $0.kind == .fallbackWriteFailed }) { return exitSaveFailed }
        return 0
    }

    static func describe(_ outcome: FetchOutcome) -> String {
        switch outcome {
        case .updated(let keys): return "fetched, \(keys.count) flags changed"
        case .unchanged: return "fetched, unchanged"
        case .failed(let error) where error.isFatal: return "FATAL: \(Formatting.printable(error.description)); nothing more will be fetched"
        case .failed(let error): return "fetch failed (\(Formatting.printable(error.description))); serving the fallback"
        case .rejected(let violations):
            return "payload rejected (\(violations.map(\.description).joined(separator: "; "))); serving the fallback"
        case .discarded: return "answer discarded"
        case .skipped(let why): return "not fetched (\(why))"
        }
    }
}
