import FeatureFlags
@testable import FlagCtlCore
import FlagServer
import Foundation
import Testing
import TestSupport

/// `flagctl watch` and `flagctl launch` in process: their output and their usage errors.
@Suite("flagctl watch and launch")
struct WatchAndLaunchTests {
    /// The stop signal of a watch that should end by `--count`: it comes only after twice the
    /// bound of `eventually`, so that a watch that missed its change ends (and the test fails
    /// on what it printed) instead of waiting for a change that already went by.
    static let late = StopSignal { try? await Task.sleep(for: TestTiming.eventualityBound * 2) }

    /// The watch's opening line (`--json`), once printed.
    static func opening(_ output: CapturedOutput) -> [String: FlagValue]? {
        jsonLines(output.out).first { ($0["event"]?.stringValue ?? "").hasPrefix("watching ") }
    }

    @Test func watchPrintsAChangeThatCameByStreamWithItsLatency() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let watch = start(
            ["watch", "--endpoint", server.flagsURL.absoluteString, "--context", "venue=venue-42", "--count", "1", "--json",
             "--timeout", "\(min(TestTiming.eventualityBound.components.seconds, 60))"],
            stop: Self.late)
        // The watch has printed what it serves, the stream is open and the fetch its opening
        // asks for has been answered, so the flip's change comes by the stream.
        #expect(await eventually {
            let log = server.requests
            guard Self.opening(watch.output) != nil, server.streamCount == 1,
                let stream = log.firstIndex(where: { $0.route == "GET /events" })
            else { return false }
            return log[stream...].contains { $0.route != "GET /events" && $0.status != nil }
        })
        #expect(Self.opening(watch.output)?["kill_switch"] == false)
        var killed = ServerDocument.seedExample
        killed.base.flags["kill_switch"] = FlagEntry(value: true)
        killed.base.version = "incident-1"
        server.document = killed
        let status = await watch.status.value
        #expect(status == 0, "\(watch.output.err)")
        let lines = jsonLines(watch.output.out)
        let change = try #require(lines.first { $0["via"] != nil }, "\(watch.output.out)")
        #expect(change["via"] == "stream" && change["kill_switch"] == true)
        // The line carries the delay since the notice; how long it is is flag-benchmarks' to
        // measure (a loaded ThreadSanitizer run once took more than 5 s for the fetch).
        #expect(change["latency_ms"]?.intValue.map { $0 >= 0 } == true, "\(watch.output.out)")
        // What changed since the opening line: the kill switch, and every flag it sends back
        // to the app's default (null).
        let flags = try #require(change["flags"]?.objectValue)
        #expect(flags["kill_switch"] == true && flags.count > 1)
        #expect(flags.filter { $0.key != "kill_switch" }.values.allSatisfy { $0 == .null }, "\(flags)")
        #expect(lines.contains { ($0["event"]?.stringValue ?? "").hasPrefix("stream_opened") })
    }

    @Test func watchFollowsLaunchDarklysStreamAndSaysThePatchBroughtTheKill() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let watch = start(
            ["watch", "--provider", "launchdarkly", "--endpoint", server.baseURL.absoluteString, "--key", "mob-test",
             "--count", "1", "--json", "--timeout", "\(min(TestTiming.eventualityBound.components.seconds, 60))"],
            stop: Self.late)
        // The stream counts as open once its put is settled (the document it carries read
        // before), and the watch has printed what it serves: the flip's change comes after
        // both, as a patch. (A flip before the opening line is in that line, not a change.)
        #expect(await eventually {
            server.streamCount == 1 && Self.opening(watch.output) != nil
        })
        var killed = ServerDocument.seedExample
        killed.base.flags["kill_switch"] = FlagEntry(value: true)
        server.document = killed
        let status = await watch.status.value
        #expect(status == 0, "\(watch.output.err)")
        let lines = jsonLines(watch.output.out)
        let change = try #require(lines.first { $0["via"] != nil }, "\(watch.output.out)")
        #expect(change["via"] == "patch" && change["kill_switch"] == true, "\(watch.output.out) \(server.requests.map(\.route))")
        #expect(lines.contains { ($0["event"]?.stringValue ?? "").contains("/meval/<context>") })
    }

    @Test func watchsOpeningLineSaysAKillThatIsAlreadyOn() async throws {
        var killed = ServerDocument.seedExample
        killed.base.flags["kill_switch"] = FlagEntry(value: true)
        let server = try FlagServer(document: killed)
        defer { server.stop() }
        // Stopped as soon as it has printed its opening line: the kill is there, not a change.
        let (status, output) = await run(
            ["watch", "--endpoint", server.flagsURL.absoluteString, "--json"] + generousTimeout, stop: StopSignal {})
        #expect(status == 0, "\(output.err)")
        let opening = try #require(Self.opening(output), "\(output.out)")
        #expect(opening["kill_switch"] == true)
        #expect(opening["event"]?.stringValue?.contains("KILL SWITCH ON") == true)
        #expect(!jsonLines(output.out).contains { $0["via"] != nil })
        let (_, text) = await run(["watch", "--endpoint", server.flagsURL.absoluteString] + generousTimeout, stop: StopSignal {})
        #expect(text.out.contains { $0.hasPrefix("watching ") && $0.contains("flags · KILL SWITCH ON; Ctrl-C stops") }, "\(text.out)")
    }

    @Test func aStreamNoticeIsSpentByTheChangeItLedToEvenWhenThatShowsNothing() async throws {
        // The watch's journal alone, driven step by step: a notice whose fetch changed nothing
        // visible (a new version, the same values) must not lend its "via" and latency to the
        // next change, which a poll brought.
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let directory = TempDir()
        var configuration = FeatureFlagProvider.Configuration()
        configuration.changeStreams = false
        let provider = FeatureFlagProvider(
            context: EvaluationContext(targetingKey: "user-1"),
            fetcher: FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: .init(budget: TestTiming.loopbackBudget)),
            store: LastKnownGoodStore(fileURL: directory.url("flags.lkg")), configuration: configuration,
            reachability: AlwaysReachable(), lifecycle: AlwaysForeground())
        defer { provider.shutdown() }
        #expect(await provider.refresh().isSuccess)
        let journal = WatchCommand.Journal()
        var lines: [(keys: [String], via: String, milliseconds: Int?)] = []
        journal.start(provider) { _ in }

        // A notice, then its fetch: a new version with the same values. Nothing to print.
        journal.noticed(via: "message")
        var sameValues = ServerDocument.seedExample
        sameValues.base.version = "same-values"
        server.document = sameValues
        #expect(await provider.refresh().isSuccess)
        #expect(provider.snapshot.version == "same-values")
        journal.change(provider) { keys, _, via, ms in lines.append((keys, via, ms)) }
        #expect(lines.isEmpty)

        // Then a poll brings a new flag: it came by poll, with no latency since a notice.
        var added = sameValues
        added.base.flags["watch_probe"] = FlagEntry(value: true)
        server.document = added
        #expect(await provider.refresh().isSuccess)
        journal.change(provider) { keys, _, via, ms in lines.append((keys, via, ms)) }
        #expect(lines.count == 1)
        #expect(lines.first?.keys == ["watch_probe"] && lines.first?.via == "poll" && lines.first?.milliseconds == nil)

        // And a notice whose change shows is that change's.
        journal.noticed(via: "message")
        server.document = sameValues
        #expect(await provider.refresh().isSuccess)
        journal.change(provider) { keys, _, via, ms in lines.append((keys, via, ms)) }
        #expect(lines.count == 2)
        #expect(lines.last?.keys == ["watch_probe"] && lines.last?.via == "message" && lines.last?.milliseconds != nil)
        #expect(journal.changes == 2)
    }

    @Test func watchAndLaunchUsageErrors() async {
        let (noEndpoint, noEndpointOut) = await run(["watch"])
        #expect(noEndpoint == 64 && noEndpointOut.err.first?.contains("--endpoint is required") == true)
        let (wrongFormat, wrongFormatOut) = await run(["watch", "--endpoint", "http://127.0.0.1:1/x", "--provider", "firebase"])
        #expect(wrongFormat == 64 && wrongFormatOut.err.first?.contains("has no change streams") == true)
        let (noKey, noKeyOut) = await run(["watch", "--endpoint", "http://127.0.0.1:1/x", "--provider", "launchdarkly"])
        #expect(noKey == 64 && noKeyOut.err.first?.contains("needs --key") == true)
        let (badCount, badCountOut) = await run(["watch", "--endpoint", "http://127.0.0.1:1/x", "--count", "0"])
        #expect(badCount == 64 && badCountOut.err.first?.contains("--count") == true)
        let (noState, noStateOut) = await run(["launch", "--endpoint", "http://127.0.0.1:1/flags"])
        #expect(noState == 64 && noStateOut.err.first?.contains("--state DIR is required") == true)
        let (badStay, badStayOut) = await run(["launch", "--endpoint", "http://127.0.0.1:1/flags", "--state", "/tmp/x", "--stay", "-1"])
        #expect(badStay == 64 && badStayOut.err.first?.contains("--stay") == true)
        let (help, helpOut) = await run(["--help"])
        #expect(help == 0 && helpOut.out.joined().contains("watch") && helpOut.out.joined().contains("launch"))
    }

    @Test func watchReadsOFREPsEnvironmentVariables() async throws {
        // `watch --provider ofrep` takes its endpoint and header fields from OFREP_ENDPOINT and
        // OFREP_HEADERS (ADR-0007) as `eval` does; the fetch carries them, nothing prints the
        // credential, and a malformed entry is a warning.
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let environment = [
            "OFREP_ENDPOINT": server.baseURL.absoluteString, "OFREP_HEADERS": "Authorization=Bearer%20envt0ken,broken",
        ]
        let fetched = StopSignal {
            _ = await eventually { server.requests.contains { $0.route == "POST ofrep" && $0.status == 200 } }
        }
        let (status, output) = await run(["watch", "--provider", "ofrep", "--json"] + generousTimeout, stop: fetched, environment: environment)
        #expect(status == 0, "\(output.err)")
        let request = try #require(server.requests.first { $0.route == "POST ofrep" })
        #expect(request.headers["authorization"] == "Bearer envt0ken")
        #expect(Self.opening(output) != nil, "\(output.out)")
        #expect(output.err.contains("flagctl watch: warning: OFREP_HEADERS entry 2 has no '=' between a name and a value; it is not used"))
        #expect(!(output.out + output.err).joined().contains("envt0ken"))
        // Without the variable (or --endpoint) it is a usage error naming the variable.
        let (missing, missingOut) = await run(["watch", "--provider", "ofrep"])
        #expect(missing == 64 && missingOut.err.contains { $0.contains("OFREP_ENDPOINT") }, "\(missingOut.err)")
    }

    @Test func watchAgainstAServiceThatIsDownSaysSoAndStops() async {
        let (status, output) = await run(["watch", "--endpoint", "http://127.0.0.1:9/flags", "--timeout", "0.5"])
        #expect(status == 0)
        // The provider's own fetch may report its failure first; the opening line says it too.
        let opening = output.out.first { $0.hasPrefix("watching ") }
        #expect(opening?.contains("fetch failed") == true, "\(output.out)")
    }
}
