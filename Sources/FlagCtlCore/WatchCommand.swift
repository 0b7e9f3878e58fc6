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
            .init(
                name: "endpoint", value: "URL",
                help: "the flag endpoint (required; for ofrep, else OFREP_ENDPOINT); again for a set of services", repeatable: true),
            .strategy,
            .init(
                name: "provider", value: "NAME",
                help: "wire format: json, ofrep (they advertise change streams) or launchdarkly (its client stream; default json)"),
            .method,
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

    /// What the watcher saw, in order. The watch reports what differs from what it last
    /// printed — the opening line's values first — so a change that lands between the first
    /// load and the opening line is in that line, and one that lands after it is a change line;
    /// none falls between the two. Lines are printed under the journal's lock, in order.
    final class Journal: Sendable {
        /// The values a line showed: every flag the provider serves, and its kill switch.
        struct Served: Equatable, Sendable {
            var values: [String: FlagValue]
            var killSwitch: Bool

            init(_ provider: FeatureFlagProvider) {
                values = Dictionary(uniqueKeysWithValues: Formatting.flagNames(provider).compactMap { name in
                    provider.flagValue(name).map { (name, $0) }
                })
                killSwitch = provider.isKillSwitchActive
            }

            /// The flags whose value differs between `self` and `other`, sorted.
            func changedKeys(from other: Served) -> [String] {
                Set(values.keys).union(other.values.keys).filter { values[$0] != other.values[$0] }.sorted()
            }
        }

        private let state = Locked<(shown: Served?, noticed: (ContinuousClock.Instant, String)?, changes: Int)>((nil, nil, 0))

        /// Starts the watch: prints the opening line with what is served now, and reports
        /// changes from these values on.
        func start(_ provider: FeatureFlagProvider, opening: (Served) -> Void) {
            state.withLock { s in
                let served = Served(provider)
                s.shown = served
                opening(served)
            }
        }

        /// A stream's notice (`via`: its event when it names one — put, patch, delete, ping).
        func noticed(via: String?) { state.withLock { $0.noticed = (.now, via ?? "stream") } }

        /// After a change event: when what is served differs from what was last printed, prints
        /// the flags that changed, how the change came and its delay since the notice.
        func change(
            _ provider: FeatureFlagProvider,
            report: (_ keys: [String], _ served: Served, _ via: String, _ milliseconds: Int?) -> Void
        ) {
            state.withLock { s in
                // The notice led to this change, shown or not: a later change is not its.
                let notice = s.noticed
                s.noticed = nil
                guard let shown = s.shown else { return }
                let served = Served(provider)
                let keys = served.changedKeys(from: shown)
                guard !keys.isEmpty || served.killSwitch != shown.killSwitch else { return }
                s.shown = served
                s.changes += 1
                guard let (noticed, via) = notice else { return report(keys, served, "poll", nil) }
                report(keys, served, via, Int((ContinuousClock.now - noticed).milliseconds))
            }
        }

        var changes: Int { state.withLock { $0.changes } }
    }

    static func run(_ arguments: ParsedArguments, console: Console, stop: StopSignal) async throws -> Int32 {
        let format = arguments.value("provider") ?? "json"
        guard ["json", "ofrep", "launchdarkly"].contains(format) else {
            throw UsageError(message: "--provider \(format) has no change streams: watch speaks json, ofrep or launchdarkly")
        }
        let (endpointURL, headers, budget) = try EndpointChoice.connection(arguments, provider: format, command: "watch", console: console)
        var count: Int?
        if let text = arguments.value("count") {
            guard let n = Int(text), n > 0 else { throw UsageError(message: "--count takes a positive number of changes") }
            count = n
        }
        let limit = count
        let (endpoints, strategy) = try EndpointChoice.services(
            arguments, format: format, url: endpointURL,
            credentials: EndpointChoice.Credentials(
                key: arguments.value("key"), streamURL: arguments.value("stream-endpoint"), method: arguments.value("method")))
        let context = try Formatting.context(arguments.all("context"))
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
                guard let provider = holder.withLock({ $0 }) else { return }
                journal.change(provider) { keys, served, via, ms in
                    if json {
                        var line: [String: FlagValue] = [
                            "time": .string(stamp), "via": .string(via), "kill_switch": .bool(served.killSwitch),
                            "flags": .object(Dictionary(uniqueKeysWithValues: keys.map { ($0, served.values[$0] ?? .null) })),
                        ]
                        line["latency_ms"] = ms.map { .int($0) }
                        console.out(Formatting.json(line))
                    } else {
                        let shown = keys.map { "\($0)=\(served.values[$0].map { FlagJSON.string($0, sortedKeys: true) } ?? "(default)")" }
                        let latency = ms.map { " +\($0) ms after the notice" } ?? ""
                        let kill = served.killSwitch ? " · KILL SWITCH ON" : ""
                        console.out("\(stamp) changed via \(via)\(latency)\(kill): \(Formatting.printable(shown.joined(separator: " ")))")
                    }
                }
                if let limit, journal.changes >= limit { done.fire() }
            case .streamOpened, .streamClosed, .fetchFailed, .error, .servicesDisagree:
                if json {
                    console.out(Formatting.json(["time": .string(stamp), "event": .string(Formatting.printable(event.description))]))
                } else {
                    console.out("\(stamp) \(Formatting.printable(event.description))")
                }
            default:
                break
            }
        })
        var fetch = FlagFetcher.Configuration(
            budget: budget, allowInsecureHTTP: arguments.has("allow-http"), headers: headers,
            trustedKeys: try SigningCommands.trustedKeys(arguments))
        fetch.strategy = strategy
        let fetcher = FlagFetcher(endpoints: endpoints, configuration: fetch)
        let store = LastKnownGoodStore(fileURL: directory.appendingPathComponent("flags.lkg"))
        let provider = FeatureFlagProvider(
            context: context, fetcher: fetcher, store: store, configuration: configuration, reachability: AlwaysReachable(),
            lifecycle: AlwaysForeground())
        holder.withLock { $0 = provider }
        let loop = Task { await provider.run() }
        let outcome = await provider.refresh()
        // The first load's own change events may still be on their way to the handler; they
        // change nothing the opening line does not show.
        await waitOffCooperativeThreads { provider.waitForEventHandler() }
        journal.start(provider) { served in
            let kill = served.killSwitch ? " · KILL SWITCH ON" : ""
            let opening = "watching \(endpointURL) for \(context.fingerprint) · \(EvalCommand.describe(outcome)) · \(Formatting.flagNames(provider).count) flags\(kill); Ctrl-C stops"
            if json {
                console.out(Formatting.json(["event": .string(Formatting.printable(opening)), "kill_switch": .bool(served.killSwitch)]))
            } else {
                console.out(Formatting.printable(opening))
            }
        }
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
