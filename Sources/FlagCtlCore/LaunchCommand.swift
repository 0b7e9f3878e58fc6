import FeatureFlags
import Foundation

/// `flagctl launch`: one launch of an app guarded against crash loops, for rehearsing the
/// kill path end to end. It reads a flag from the fallback file before anything else — like
/// an app that reaches the flagged code at launch — and crashes (abort) when the flag is on;
/// otherwise it fetches and crashes if the fetched value is on, else marks itself healthy.
/// After two crashed launches in a row, the next starts in safe mode and survives.
enum LaunchCommand {
    static let spec = CommandSpec(
        name: "launch", summary: "rehearse one launch of an app with the crash-loop guard (crashes while --flag is on)",
        positionals: [],
        options: [
            .init(name: "endpoint", value: "URL", help: "the JSON flag endpoint (POST), e.g. http://127.0.0.1:8080/flags (required)"),
            .init(name: "state", value: "DIR", help: "the app's fallback file and launch journal live here (required)"),
            .init(name: "flag", value: "NAME", help: "the flag whose code crashes when it is on (default crashy_feature)"),
            .init(name: "stay", value: "SECONDS", help: "in safe mode, keep running up to this long for a fix to stream in (default 0)"),
            .timeout,
        ],
        examples: [
            "flagctl launch --endpoint http://127.0.0.1:8080/flags --state /tmp/app",
            "flagctl launch --endpoint http://127.0.0.1:8080/flags --state /tmp/app --stay 30",
        ],
        exitStatuses: [
            (0, "the launch survived (healthy, or in safe mode)"),
            (64, "usage error"),
            (134, "the launch crashed (SIGABRT): the flag was on"),
        ])

    static func run(_ arguments: ParsedArguments, console: Console) async throws -> Int32 {
        guard let endpoint = arguments.value("endpoint").flatMap(URL.init(string:)), endpoint.scheme != nil else {
            throw UsageError(message: "--endpoint URL is required (the JSON endpoint, e.g. http://127.0.0.1:8080/flags)")
        }
        guard let state = arguments.value("state") else {
            throw UsageError(message: "--state DIR is required: the launch journal must outlive the process")
        }
        let flag = FlagKey(arguments.value("flag") ?? "crashy_feature", default: false)
        let stay: Duration
        if let text = arguments.value("stay") {
            guard let seconds = Double(text), seconds >= 0, seconds <= 3_600 else {
                throw UsageError(message: "--stay takes seconds between 0 and 3600")
            }
            stay = .milliseconds(Int64(seconds * 1000))
        } else {
            stay = .zero
        }
        let budget = try arguments.fetchBudget()
        let directory = URL(fileURLWithPath: (state as NSString).expandingTildeInPath)
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)

        let store = LastKnownGoodStore(fileURL: directory.appendingPathComponent("flags.lkg"))
        let fetcher = FlagFetcher(endpoint: .json(post: endpoint), configuration: .init(budget: budget))
        let configuration = FeatureFlagProvider.Configuration(crashLoopGuard: CrashLoopGuard(launchesBeforeSafeMode: 2, healthyAfter: nil))
        let provider = FeatureFlagProvider(
            context: EvaluationContext(targetingKey: "rehearsal"), fetcher: fetcher, store: store, configuration: configuration,
            reachability: AlwaysReachable(), lifecycle: AlwaysForeground())
        let safeAtLaunch = provider.safeMode
        func say(_ phase: String, _ extra: [String: FlagValue] = [:]) {
            var line: [String: FlagValue] = [
                "phase": .string(phase), "flag": .bool(provider.value(flag)), "safe_mode": .bool(provider.safeMode != nil),
                "status": .string(provider.status.rawValue),
            ]
            for (key, value) in extra { line[key] = value }
            console.out(Formatting.json(line))
        }
        say("launch", ["reason": safeAtLaunch.map { .string($0) } ?? .null])
        // The app reaches the flagged code before any fetch: this is the crash at launch.
        if provider.value(flag) { crash(console, "the flag was on at launch") }

        let loop = Task { await provider.run() }
        defer {
            provider.shutdown()
            loop.cancel()
        }
        // Joins the first fetch and returns once its values are stored, as an app's would be
        // before it goes on to use them.
        _ = await provider.refresh()
        say("fetched")
        if provider.value(flag) { crash(console, "the fetched value turned the flag on") }
        if provider.safeMode != nil, stay > .zero {
            // Alive in safe mode: a fix pushed by the operator ends it (by stream or poll).
            let deadline = ContinuousClock.now + stay
            while provider.safeMode != nil, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
            if provider.value(flag) { crash(console, "the flag came back on") }
        }
        if provider.safeMode == nil {
            // A fix that ended safe mode is served the moment it arrives and written to the
            // store a moment later. This process exits next: `waitForWrites()` returns once the
            // store holds what is served and the journal is written, so the next launch starts
            // from them.
            provider.markHealthy()
            await waitOffCooperativeThreads { provider.waitForWrites() }
            say("healthy")
        } else {
            say("survived in safe mode")
        }
        return 0
    }

    private static func crash(_ console: Console, _ why: String) -> Never {
        console.err("flagctl launch: crashing: \(why)")
        abort()
    }
}
