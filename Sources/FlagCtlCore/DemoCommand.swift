import FeatureFlags
import FeatureFlagsFlagd
import FlagServer
import Foundation

/// `flagctl demo`: the demo script end to end — launch, log in, switch plans, a new value, a
/// payload the schema rejects (the Last-Known-Good stays), the kill switch on and off, an
/// outage, a venue change, two merged plans, and a release that crashes at launch until the
/// crash-loop guard starts it in safe mode — through a real `FeatureFlagProvider`
/// against an embedded loopback `FlagServer` serving the demo data.
enum DemoCommand {
    static let spec = CommandSpec(
        name: "demo", summary: "play the demo script against a loopback flag server",
        positionals: [],
        options: [
            .init(name: "json", value: nil, help: "print one JSON line per step"),
            .init(name: "state", value: "DIR", help: "keep the fallback file here (default: a temporary directory)"),
            .init(name: "bucketing", value: "MODE", help: "how the flagd step's fractional buckets: string (default), cbor or legacy-percent"),
            .timeout,
        ],
        examples: ["flagctl demo", "flagctl demo --json", "flagctl demo --bucketing cbor"])

    static let themeColor = FlagKey("plan_themeColor", default: "#7F8C8D")
    static let displayName = FlagKey("plan_displayName", default: "Limited mode")
    static let dataLimit = FlagKey("plan_data_limit", default: 0)
    static let features = FlagKey("plan_feature_list", default: [String]())
    static let newCheckout = FlagKey("new_checkout", default: false)

    /// The flagd definitions of the local-evaluation step: venues 50–59 pilot the new checkout
    /// with the night theme.
    static let localRules = #"""
        {
          "$schema": "https://flagd.dev/schema/v0/flags.json",
          "flags": {
            "new_checkout": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "off",
              "targeting": {"if": [{"starts_with": [{"var": "venue"}, "venue-5"]}, "on"]}},
            "plan_themeColor": {"state": "ENABLED", "variants": {"blue": "#3498DB", "night": "#2C3E50"}, "defaultVariant": "blue",
              "targeting": {"if": [{"starts_with": [{"var": "venue"}, "venue-5"]}, "night"]}},
            "plan_displayName": {"state": "ENABLED", "variants": {"business": "AuraLink Business"}, "defaultVariant": "business"},
            "plan_data_limit": {"state": "ENABLED", "variants": {"business": 500}, "defaultVariant": "business"},
            "kill_switch": {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "off"}
          },
          "metadata": {"version": "rules-2025-08-04"}
        }
        """#

    /// One step of the script and what the app served after it.
    struct Step {
        let number: Int
        /// What happens, in plain words.
        let title: String
        /// What the step shows about the library, in plain words.
        let explains: String
        let theme: String
        let name: String
        let limit: Int
        let features: [String]
        let newCheckout: Bool
        let limited: Bool
        let source: FlagSource
        let reason: FlagReason
        let version: String?
        let status: ProviderStatus
        let milliseconds: Int
        /// What was measured or found, e.g. the rejected payload's violation.
        let note: String

        /// Everything the text shows, as one JSON object (`"kind": "step"`).
        var json: [String: FlagValue] {
            var members: [String: FlagValue] = [
                "kind": "step", "step": .int(number), "title": .string(title), "explains": .string(explains),
                "plan_themeColor": .string(theme), "plan_displayName": .string(name), "plan_data_limit": .int(limit),
                "plan_feature_list": .list(features.map(FlagValue.string)), "new_checkout": .bool(newCheckout),
                "limited_mode": .bool(limited), "source": .string(source.rawValue), "reason": .string(reason.rawValue),
                "status": .string(status.rawValue), "ms": .int(milliseconds), "note": .string(note),
            ]
            members["version"] = version.map(FlagValue.string) ?? .null
            return members
        }

        /// The step as text lines at most `width` columns wide: the title with its time, then,
        /// indented, what it shows, the values served, where they came from, and the finding.
        func lines(width: Int) -> [String] {
            let number = (self.number < 10 ? " " : "") + "\(self.number)  "
            let time = "\(milliseconds) ms"
            let titleWidth = max(1, width - number.count - time.count - 1)
            let title = FlagText.clip(self.title, to: titleWidth)
            let gap = String(repeating: " ", count: max(1, width - number.count - title.count - time.count))
            var lines = [number + title + gap + time]
            let indent = "    "
            let values = [
                limited ? "LIMITED MODE" : nil, name, theme, "limit \(limit)",
                features.count == 1 ? "1 feature" : "\(features.count) features", newCheckout ? "new checkout" : nil,
            ].compactMap { $0 }.joined(separator: " · ")
            let origin = [source.rawValue, reason.rawValue, version ?? "no version", status.rawValue].joined(separator: " · ")
            lines += FlagText.wrap(explains, width: width - indent.count).map { indent + $0 }
            for (label, text) in [("serves", values), ("from", origin), ("found", note)] where !text.isEmpty {
                let wrapped = FlagText.wrap(text, width: width - indent.count - 8)
                for (i, line) in wrapped.enumerated() {
                    lines.append(indent + (i == 0 ? label.padding(toLength: 8, withPad: " ", startingAt: 0) : "        ") + line)
                }
            }
            return lines
        }
    }

    /// The widest line the text output prints: it reads in an 80-column terminal.
    static let textWidth = 80

    static func run(_ arguments: ParsedArguments, console: Console) async throws -> Int32 {
        let json = arguments.has("json")
        let given = arguments.value("state").map { URL(fileURLWithPath: ($0 as NSString).expandingTildeInPath) }
        let directory = given ?? TemporaryDirectories.make("flagctl-demo")
        defer { if given == nil { TemporaryDirectories.remove(directory) } }
        let budget = try arguments.fetchBudget()
        let bucketing = try EndpointChoice.bucketing(arguments.value("bucketing")) ?? .highPrecision
        let kept = given.map { $0.appendingPathComponent("flags.lkg").path }
        let steps: [Step]
        do {
            steps = try await play(in: directory, budget: budget, bucketing: bucketing) { step in
                if json {
                    console.out(Formatting.json(step.json))
                } else {
                    console.out("")
                    for line in step.lines(width: textWidth) { console.out(line) }
                }
                // Nobody reads any more (`flagctl demo | head`): stop playing, clean up.
                if console.isOutputClosed { throw OutputClosed() }
            } intro: { server in
                if json {
                    console.out(Formatting.json([
                        "kind": "start", "version": .string(FlagCtl.version), "server": .string(server.absoluteString),
                        "state": kept.map(FlagValue.string) ?? .null,
                    ]))
                } else {
                    console.out("FeatureFlags demo: a FeatureFlagProvider against a loopback flag server")
                    console.out("at \(server.absoluteString), step by step.")
                    console.out("Each step: what the app serves, then where it came from — source · reason ·")
                    console.out("version · status (FlagDetails.source and .reason, the snapshot's version, the")
                    console.out("provider's status) — and what the step shows.")
                }
            }
        } catch is OutputClosed {
            return Console.closedOutputExit
        }
        if json {
            console.out(Formatting.json(["kind": "end", "steps": .int(steps.count), "state": kept.map(FlagValue.string) ?? .null]))
        } else {
            console.out("")
            console.out("\(steps.count) steps.")
            // A path is printed whole, never wrapped: it is for copying.
            console.out("Fallback file: " + (kept ?? "a temporary directory, removed now; --state DIR keeps it."))
        }
        return 0
    }

    /// Thrown out of the script when nobody reads the output any more.
    struct OutputClosed: Error {}

    /// Plays the script; reports each step as it completes.
    static func play(
        in directory: URL, budget: Duration = .seconds(2), bucketing: FractionalBucketing = .highPrecision,
        report: (Step) throws -> Void, intro: (URL) -> Void
    ) async throws -> [Step] {
        var document = ServerDocument.seedExample
        var server = try FlagServer(document: document)
        let port = server.port
        let anonymous = EvaluationContext(targetingKey: nil, venue: "venue-7")
        let personal = EvaluationContext(targetingKey: "demo-user", venue: "venue-7", partner: "auralink", planTier: "personal")
        let business = personal.with(DemoAttribute.planTier, "business")
        let venue42 = business.with(EvaluationContext.Attribute.venue, "venue-42")

        let store = LastKnownGoodStore(fileURL: directory.appendingPathComponent("flags.lkg"))
        let fetcher = FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: .init(budget: budget))
        let log = EventLog()
        let configuration = FeatureFlagProvider.Configuration(
            schema: .seedExample, merge: .seedPlans, eventHandler: { event in log.append(event) })
        let provider = FeatureFlagProvider(
            context: anonymous, fetcher: fetcher, store: store, configuration: configuration, reachability: AlwaysReachable())
        intro(server.baseURL)
        let loop = Task { await provider.run() }
        defer { server.stop() }
        // Every provider of the script, so that a stop part-way (nobody reads the output any
        // more) ends them and waits for their writes before the directory is removed.
        var others: [FeatureFlagProvider] = []
        func finish() async {
            let clients = [provider] + others
            for client in clients { client.shutdown() }
            await loop.value
            await waitOffCooperativeThreads { for client in clients { client.waitForWrites() } }
        }
        var steps: [Step] = []
        do {
            func record(
                _ title: String, explains: String, since start: ContinuousClock.Instant, note: String = "",
                client: FeatureFlagProvider? = nil
            ) throws {
                let provider = client ?? provider
                let d = provider.details(themeColor)
                let step = Step(
                    number: steps.count + 1, title: title, explains: explains, theme: d.value, name: provider.value(displayName),
                    limit: provider.value(dataLimit), features: provider.value(features), newCheckout: provider.value(newCheckout),
                    limited: provider.isKillSwitchActive, source: d.source, reason: d.reason, version: d.snapshotVersion,
                    status: provider.status,
                    milliseconds: Int((ContinuousClock.now - start).milliseconds),
                    note: note)
                steps.append(step)
                try report(step)
            }

            var start = ContinuousClock.now
            let servedFirst = provider.details(themeColor).source
            _ = await provider.waitUntilReady(timeout: budget + .seconds(3))
            try record(
                "The app launches, signed out, at venue-7",
                explains: "It serves at once what it holds (an earlier run's fallback file, else its code defaults), then fetches the server's defaults.",
                since: start,
                note: servedFirst == .fallback
                    ? "its fallback file first, then the server's defaults" : "code defaults first (no fallback file yet), then the server's defaults")

            start = ContinuousClock.now
            provider.identify(personal)
            _ = await provider.waitUntilReady(timeout: budget + .seconds(3))
            try record(
                "The user logs in: AuraLink Personal plan",
                explains: "Identifying the user costs one fetch and brings that user's plan.",
                since: start, note: "identify → one fetch")

            start = ContinuousClock.now
            provider.identify(business)
            _ = await provider.waitUntilReady(timeout: budget + .seconds(3))
            try record(
                "The user switches to the AuraLink Business plan",
                explains: "A new context brings its own values: the Business theme and more features.",
                since: start, note: "features expanded (+team)")

            /// `document` with the Business plan's theme colour set to `colour`.
            func businessTheme(_ colour: String, in document: ServerDocument) -> ServerDocument {
                var changed = document
                if let index = changed.rules.firstIndex(where: { $0.name == "auralink-business" }) {
                    changed.rules[index].flags["plan_themeColor"] = FlagEntry(value: .string(colour))
                }
                return changed
            }
            /// The operator publishes `next` as `version`; the server's change stream tells the app,
            /// which fetches at once. Waits until the app serves `version` or rejects the document
            /// (a fetch already in flight may end first with the previous one); forces a fetch only
            /// if neither happened within the budget.
            func publish(_ next: inout ServerDocument, version: String) async -> FetchOutcome {
                next.base.version = version
                let mark = log.count
                server.document = next
                let deadline = ContinuousClock.now + budget + .seconds(3)
                while ContinuousClock.now < deadline {
                    if provider.details(themeColor).snapshotVersion == version {
                        return log.lastOutcome(since: mark) { if case .updated = $0 { true } else { false } } ?? .updated([])
                    }
                    if let rejected = log.lastOutcome(since: mark, where: { if case .rejected = $0 { true } else { false } }) {
                        return rejected
                    }
                    try? await Task.sleep(for: .milliseconds(2))
                }
                return await provider.refresh()
            }

            start = ContinuousClock.now
            document = businessTheme("#1ABC9C", in: document)
            _ = await publish(&document, version: "2025-08-04T11:00:00Z")
            try record(
                "The server publishes a new theme colour",
                explains: "The change stream pushes it to the running app: no poll, no restart.",
                since: start, note: "pushed by the change stream")

            start = ContinuousClock.now
            var broken = businessTheme("#1ABC9G", in: document)
            let rejected = await publish(&broken, version: "2025-08-04T11:30:00Z")
            try record(
                "The server publishes a broken colour, #1ABC9G",
                explains: "The schema rejects the whole payload; the app keeps its last good values.",
                since: start, note: EvalCommand.describe(rejected))

            start = ContinuousClock.now
            document.base.flags["kill_switch"] = FlagEntry(value: true)
            document.base.version = "2025-08-04T12:00:00Z"
            let killMark = log.count
            server.document = document
            // The time from the operator's flip to a read that returns the safe default.
            let killDeadline = ContinuousClock.now + budget + .seconds(3)
            while !provider.isKillSwitchActive, ContinuousClock.now < killDeadline { try? await Task.sleep(for: .milliseconds(1)) }
            let killMilliseconds = Int((ContinuousClock.now - start).milliseconds)
            _ = await log.fetchAfter(.changeNotified, since: killMark, within: budget + .seconds(3))
            try record(
                "The operator turns the kill switch on",
                explains: "Every flag falls to its safe default at once: the app runs in limited mode.",
                since: start,
                note: provider.isKillSwitchActive
                    ? "by stream: safe default read \(killMilliseconds) ms after the flip (the step's time adds the fetch that follows)"
                    : "no stream event came; not killed yet")

            start = ContinuousClock.now
            document.base.flags["kill_switch"] = FlagEntry(value: false)
            _ = await publish(&document, version: "2025-08-04T12:05:00Z")
            try record(
                "The operator turns the kill switch off",
                explains: "The served values come back.",
                since: start, note: "values back")

            start = ContinuousClock.now
            server.stop()
            let outage = await provider.refresh()
            try record(
                "The flag server goes away",
                explains: "Offline, the app keeps serving its last good values and says why.",
                since: start, note: EvalCommand.describe(outage))

            start = ContinuousClock.now
            let back = log.count
            server = try FlagServer(document: document, configuration: .init(port: port))
            _ = await provider.refresh()
            // The change stream reconnects on its own (with jitter) and fetches once more.
            let reopened = await log.fetchAfter(.streamOpened, since: back, within: .seconds(5)) != nil
            try record(
                "The flag server comes back",
                explains: "The app is online again and its change stream reconnects by itself.",
                since: start,
                note: reopened ? "online again; stream reconnected" : "online again; stream not back yet (polling)")

            start = ContinuousClock.now
            let before = server.requests.filter { $0.contextFingerprint == venue42.fingerprint }.count
            provider.identify(venue42)
            _ = await provider.waitUntilReady(timeout: budget + .seconds(3))
            let refetches = server.requests.filter { $0.contextFingerprint == venue42.fingerprint }.count - before
            try record(
                "The venue changes to venue-42",
                explains: "A changed attribute costs one re-fetch; venue-42 pilots the new checkout.",
                since: start, note: "\(refetches) re-fetch; new_checkout pilot")

            start = ContinuousClock.now
            provider.identify(merging: [personal, business])
            _ = await provider.waitUntilReady(timeout: budget + .seconds(3))
            try record(
                "The user holds both AuraLink plans at once",
                explains: "Two contexts merge flag by flag: the Business theme, every feature, the larger limit.",
                since: start, note: "Business theme, union of features, max limit")

            // The new release crashes at launch: real `flagctl launch` processes on their own state.
            start = ContinuousClock.now
            let note: String
            if let binary = CrashLoopRehearsal.executable() {
                let state = directory.appendingPathComponent("launched-app")
                switch await CrashLoopRehearsal.play(binary: binary, server: server, state: state, budget: budget) {
                case .success(let launches):
                    note = "launches: " + launches.map(\.label).joined(separator: " · ")
                case .failure(let error):
                    note = "not rehearsed: \(error.description)"
                }
            } else {
                note = "not rehearsed: no flagctl executable to launch"
            }
            try record(
                "A new release crashes at launch",
                explains: "Real processes: after two crashes the crash-loop guard starts the app in safe mode, "
                    + "on the values of its last healthy launch; the fixed values end safe mode.",
                since: start, note: note)

            // Rules instead of values: fetched once, then any venue is evaluated on the device.
            start = ContinuousClock.now
            try server.serveFlagd(Array(localRules.utf8))
            let local = FeatureFlagProvider(
                context: business,
                fetcher: FlagFetcher(
                    endpoint: .flagd(url: server.baseURL.appendingPathComponent("flagd/flags.json"), bucketing: bucketing),
                    configuration: .init(budget: budget)),
                store: LastKnownGoodStore(fileURL: directory.appendingPathComponent("local-rules.lkg")), reachability: AlwaysReachable())
            others.append(local)
            let fetched = await local.refresh()
            server.stop()
            let venue51 = business.with(EvaluationContext.Attribute.venue, "venue-51")
            local.identify(venue51)
            // The new venue's fetch fails (the server is gone): the status settles on ERROR, and
            // the values stay those the rules gave on the device.
            let offline = await local.refresh()
            let settled = offline.isSuccess ? "fetched after all" : "the venue's fetch failed (the server is gone); evaluated on the device"
            try record(
                "Offline at venue-51, from flagd rules",
                explains: "Rules fetched once are evaluated on the device, for a venue never fetched (the rules file sets its own plan values).",
                since: start,
                note: fetched.isSuccess ? "rules fetched once; \(settled)" : "rules not fetched: \(EvalCommand.describe(fetched))",
                client: local)
        } catch {
            await finish()
            throw error
        }
        await finish()
        return steps
    }
}

/// The provider's events as they happen, for steps that wait on them.
final class EventLog: Sendable {
    private let events = Locked<[FlagEvent]>([])

    func append(_ event: FlagEvent) { events.withLock { $0.append(event) } }
    var count: Int { events.withLock { $0.count } }

    /// The outcome of the last fetch logged after position `mark` that `matches`; nil when none.
    func lastOutcome(since mark: Int, where matches: (FetchOutcome) -> Bool) -> FetchOutcome? {
        events.withLock { list in
            guard list.count > mark else { return nil }
            return list[mark...].last(where: { event in
                guard event.kind == .fetchCompleted, let outcome = event.outcome else { return false }
                return matches(outcome)
            })?.outcome
        }
    }

    /// The outcome of the first fetch that completed after an event of kind `trigger` logged
    /// after position `mark` (after a change notification: the first that brought something);
    /// nil when none within `limit`.
    func fetchAfter(_ trigger: FlagEvent.Kind, since mark: Int, within limit: Duration) async -> FetchOutcome? {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            let found: FetchOutcome? = events.withLock { list in
                guard list.count > mark else { return nil }
                let tail = list[mark...]
                guard let cause = tail.firstIndex(where: { $0.kind == trigger }) else { return nil }
                // A fetch that was already in flight may end first with nothing new: skip it.
                return list[cause...].first(where: { event in
                    guard event.kind == .fetchCompleted, let outcome = event.outcome else { return false }
                    if trigger == .changeNotified, outcome == .unchanged || outcome == .discarded { return false }
                    return true
                })?.outcome
            }
            if let found { return found }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return nil
    }
}
