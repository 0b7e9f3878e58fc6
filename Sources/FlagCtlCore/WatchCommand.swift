import FeatureFlags
import FeatureFlagsSigning
import Foundation

/// `flagctl watch`: for operators during an incident — a provider on the flag service with its
/// change streams open, printing every flag change as it arrives: which flags, their new
/// values, how the change came (stream, poll) and how long after the service's notice.
enum WatchCommand {
    static let spec = CommandSpec(
        name: "watch", summary: "print every flag change as a change stream brings it, with its latency",
        positionals: [],
        options: [
            .init(name: "endpoint", value: "URL", help: "the flag endpoint (required)"),
            .init(
                name: "provider", value: "NAME",
                help: "wire format: json, ofrep (they advertise change streams) or launchdarkly (its client stream; default json)"),
            .init(name: "stream-endpoint", value: "URL", help: "launchdarkly: the stream base URL (default: LaunchDarkly's, or the --endpoint server)"),
            .init(name: "key", value: "SECRET", help: "launchdarkly: the mobile key"),
            .init(name: "context", value: "KEY=VALUE", help: "one context attribute; targetingKey=… sets the key", repeatable: true),
            .init(name: "header", value: "'NAME: VALUE'", help: "an extra request header, e.g. authorisation", repeatable: true),
            .init(name: "count", value: "N", help: "stop after N changes (default: run until Ctrl-C)"),
            .timeout,
            .init(name: "allow-http", value: nil, help: "allow plain HTTP to hosts that are not loopback"),
            SigningCommands.trustOption,
            .init(name: "json", value: nil, help: "print JSON lines"),
        ],
        examples: [
            "flagctl watch --endpoint http://127.0.0.1:8080/flags --context venue=venue-42",
            "flagctl watch --provider ofrep --endpoint https://flags.example.com --header 'Authorization: Bearer …' --json",
            "flagctl watch --provider launchdarkly --endpoint https://clientsdk.launchdarkly.com --stream-endpoint https://clientstream.launchdarkly.com --key mob-…",
        ],
        exitStatuses: [(0, "stopped (Ctrl-C, or --count changes seen)"), (64, "usage error"), (77, "FATAL: credentials refused")])

    /// What the watcher saw, in order.
    private final class Journal: Sendable {
        private let state = Locked<(watching: Bool, noticed: (ContinuousClock.Instant, String)?, changes: Int)>((false, nil, 0))
        /// From now on changes are reported (the first load is not a change).
        func start() { state.withLock { $0.watching = true } }
        /// A stream's notice (`via`: its event when it names one — put, patch, delete, ping).
        func noticed(via: String?) { state.withLock { $0.noticed = (.now, via ?? "stream") } }
        /// How the change that just happened came, and its delay since the notice; nil before
        /// the watch started.
        func change() -> (via: String, milliseconds: Int?)? {
            state.withLock { s in
                guard s.watching else { return nil }
                s.changes += 1
                defer { s.noticed = nil }
                guard let (noticed, via) = s.noticed else { return ("poll", nil) }
                return (via, Int((ContinuousClock.now - noticed).milliseconds))
            }
        }
        var changes: Int { state.withLock { $0.changes } }
    }

    static func run(_ arguments: ParsedArguments, console: Console, stop: StopSignal) async throws -> Int32 {
        guard let endpointURL = arguments.value("endpoint") else {
            throw UsageError(message: "--endpoint is required: flagctl watch --endpoint URL")
        }
        let format = arguments.value("provider") ?? "json"
        guard ["json", "ofrep", "launchdarkly"].contains(format) else {
            throw UsageError(message: "--provider \(format) has no change streams: watch speaks json, ofrep or launchdarkly")
        }
        var count: Int?
        if let text = arguments.value("count") {
            guard let n = Int(text), n > 0 else { throw UsageError(message: "--count takes a positive number of changes") }
            count = n
        }
        let limit = count
        let headers = try arguments.headers()
        let endpoint = try EndpointChoice.make(
            format, url: endpointURL,
            credentials: EndpointChoice.Credentials(key: arguments.value("key"), streamURL: arguments.value("stream-endpoint")))
        let context = try Formatting.context(arguments.all("context"))
        let budget = try arguments.fetchBudget()
        let json = arguments.has("json")
        let journal = Journal()
        let directory = TemporaryDirectories.make("flagctl-watch")
        defer { TemporaryDirectories.remove(directory) }
        let waitForStop = stop.arm()
        let done = Wakeup()

        let holder = Locked<FeatureFlagProvider?>(nil)
        let configuration = FeatureFlagProvider.Configuration(eventHandler: { event in
            let stamp = Formatting.timestamp()
            switch event.kind {
            case .changeNotified:
                journal.noticed(via: event.via)
            case .configurationChanged:
                guard let provider = holder.withLock({ $0 }), let (via, ms) = journal.change() else { return }
                let keys = (event.keys ?? []).sorted()
                let values = keys.map { key in (key, provider.flagValue(key)) }
                if json {
                    var line: [String: FlagValue] = [
                        "time": .string(stamp), "via": .string(via), "kill_switch": .bool(provider.isKillSwitchActive),
                        "flags": .object(Dictionary(uniqueKeysWithValues: values.map { ($0.0, $0.1 ?? .null) })),
                    ]
                    line["latency_ms"] = ms.map { .int($0) }
                    console.out(Formatting.json(line))
                } else {
                    let shown = values.map { "\($0.0)=\($0.1.map { FlagJSON.string($0, sortedKeys: true) } ?? "(default)")" }
                    let latency = ms.map { " +\($0) ms after the notice" } ?? ""
                    let kill = provider.isKillSwitchActive ? " · KILL SWITCH ON" : ""
                    console.out("\(stamp) changed via \(via)\(latency)\(kill): \(Formatting.printable(shown.joined(separator: " ")))")
                }
                if let limit, journal.changes >= limit { done.fire() }
            case .streamOpened, .streamClosed, .fetchFailed, .error:
                if json {
                    console.out(Formatting.json(["time": .string(stamp), "event": .string(Formatting.printable(event.description))]))
                } else {
                    console.out("\(stamp) \(Formatting.printable(event.description))")
                }
            default:
                break
            }
        })
        let fetcher = FlagFetcher(
            endpoint: endpoint,
            configuration: .init(
                budget: budget, allowInsecureHTTP: arguments.has("allow-http"), headers: headers,
                trustedKeys: try SigningCommands.trustedKeys(arguments)))
        let store = LastKnownGoodStore(fileURL: directory.appendingPathComponent("flags.lkg"))
        let provider = FeatureFlagProvider(
            context: context, fetcher: fetcher, store: store, configuration: configuration, reachability: AlwaysReachable(),
            lifecycle: AlwaysForeground())
        holder.withLock { $0 = provider }
        let loop = Task { await provider.run() }
        let outcome = await provider.refresh()
        let opening = "watching \(endpointURL) for \(context.fingerprint) · \(EvalCommand.describe(outcome)) · \(Formatting.flagNames(provider).count) flags; Ctrl-C stops"
        console.out(json ? Formatting.json(["event": .string(Formatting.printable(opening))]) : Formatting.printable(opening))
        // The first load's own change events may still be on their way to the handler.
        provider.waitForEventHandler()
        journal.start()
        // Whichever comes first ends the watch: the stop signal, the --count-th change, or the
        // provider's loop ending on a fatal error. (Neither the signal's wait nor a task's value
        // ends on cancellation, so they run beside the watch, not in a group it would wait for.)
        let stopping = Task { await waitForStop(); done.fire() }
        let ending = Task { await loop.value; done.fire() }
        await done.wait()
        stopping.cancel()
        provider.shutdown()
        await ending.value
        holder.withLock { $0 = nil }
        return provider.status == .fatal ? EvalCommand.exitFatal : 0
    }
}
