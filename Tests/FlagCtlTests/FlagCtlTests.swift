import ChildProcesses
import FeatureFlagsServices
import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
@testable import FeatureFlagsFlagd
@testable import FlagCtlCore
import FlagServer

/// flagctl in-process: arguments, demo, eval, serve and lint, with captured output.
@Suite("flagctl")
struct FlagCtlTests {
    let budget = generousTimeout


    // MARK: Arguments

    @Test func helpVersionAndUnknownCommands() async {
        let (help, helpOut) = await run(["--help"])
        #expect(help == 0 && helpOut.out.joined().contains("COMMANDS:"))
        let (none, noneOut) = await run([])
        #expect(none == 64 && noneOut.err.joined().contains("COMMANDS:") && noneOut.out.isEmpty, "no command: the help, as a usage error")
        let (version, versionOut) = await run(["--version"])
        #expect(version == 0 && versionOut.out == [FlagCtl.version])
        let (unknown, unknownOut) = await run(["evl"])
        #expect(unknown == 64)
        #expect(unknownOut.err.first == "flagctl: unknown command 'evl' (did you mean eval?)")
        for command in ["demo", "eval", "serve", "lint"] {
            let (status, out) = await run([command, "--help"])
            #expect(status == 0)
            #expect(out.out.joined().contains("USAGE: flagctl \(command)"))
        }
    }

    @Test func usageErrorsSayWhatToTypeInstead() async {
        let cases: [([String], String)] = [
            (["eval"], "flagctl eval: --endpoint is required: flagctl eval --endpoint URL"),
            (["eval", "--endpont", "x"], "flagctl eval: unknown option --endpont (did you mean --endpoint?); see flagctl eval --help"),
            (["eval", "--endpoint"], "flagctl eval: --endpoint needs a value: --endpoint URL"),
            (["eval", "--endpoint", "ftp://x/y?key=s3cr3t"], "flagctl eval: --endpoint needs an http(s) URL, got a URL with scheme 'ftp'; e.g. --endpoint http://127.0.0.1:8080/flags"),
            (["eval", "--endpoint", "http://127.0.0.1:1/f", "--header", "Authorization Bearer s3cr3t"], "flagctl eval: --header takes 'Name: value' and the value given has no colon before it (not shown: it may be a secret)"),
            (["eval", "--endpoint", "http://127.0.0.1:1/f", "--context", "venue\u{1B}[2J"], "flagctl eval: --context takes key=value, got 'venue\\u{1B}[2J'; e.g. --context venue=venue-42"),
            (["eval", "--endpoint", "http://127.0.0.1:1/f", "--context", "venue"], "flagctl eval: --context takes key=value, got 'venue'; e.g. --context venue=venue-42"),
            (["eval", "--endpoint", "http://127.0.0.1:1/f", "--timeout", "0"], "flagctl eval: --timeout takes seconds from 0.001 to 60, got '0'; e.g. --timeout 0.5"),
            (["eval", "--endpoint", "http://127.0.0.1:1/f", "--timeout", "0.0009"], "flagctl eval: --timeout takes seconds from 0.001 to 60, got '0.0009'; e.g. --timeout 0.5"),
            (["eval", "--endpoint", "http://127.0.0.1:1/f", "--timeout", "60.5"], "flagctl eval: --timeout takes seconds from 0.001 to 60, got '60.5'; e.g. --timeout 0.5"),
            (["eval", "--endpoint", "http://127.0.0.1:1/f", "--timeout", "nan"], "flagctl eval: --timeout takes seconds from 0.001 to 60, got 'nan'; e.g. --timeout 0.5"),
            (["eval", "--endpoint", "http://127.0.0.1:1/f", "--provider", "jsn"], "flagctl eval: unknown provider 'jsn' (did you mean json?); choose one of: json, ofrep, launchdarkly, firebase, unleash, flagd"),
            (["eval", "--endpoint", "http://127.0.0.1:1", "--provider", "launchdarkly"], "flagctl eval: --provider launchdarkly needs --key (the mobile key)"),
            (["eval", "--endpoint", "http://127.0.0.1:1", "--provider", "firebase", "--key", "k"], "flagctl eval: --provider firebase needs --project (the project number)"),
            (["eval", "--endpoint", "http://127.0.0.1:1/f", "--timeout", "1", "--timeout", "2"], "flagctl eval: --timeout given twice; give it once"),
            (["eval", "--json=yes", "--endpoint", "http://127.0.0.1:1/f"], "flagctl eval: --json takes no value"),
            (["eval", "--endpoint", "http://127.0.0.1:1/f", "--method", "put"], "flagctl eval: --method takes get or post, not 'put'"),
            (["eval", "--endpoint", "http://127.0.0.1:1/{venue}.json", "--method", "post"], "flagctl eval: --method post cannot fill {placeholders}: a URL template is fetched by GET"),
            (["eval", "--endpoint", "http://127.0.0.1:1", "--provider", "ofrep", "--method", "get"], "flagctl eval: --method applies to --provider json (the others ask as their service expects)"),
            (["eval", "--endpoint", "http://127.0.0.1:1/f", "--strategy", "first-match"], "flagctl eval: --strategy combines several services: give --endpoint more than once"),
            (["eval", "--endpoint", "http://127.0.0.1:1/f", "--endpoint", "http://127.0.0.1:2/f", "--strategy", "best"], "flagctl eval: --strategy takes chain, first-match, first-successful or comparison, not 'best'"),
            (["lint"], "flagctl lint: missing FILE"),
            (["serve"], "flagctl serve: missing FILE"),
            (["lint", "a.json", "b.json"], "flagctl lint: unexpected argument b.json"),
            (["lint", "a.json", "--write"], "flagctl lint: --write only goes with --bump: flagctl lint FILE --bump --write"),
            (["serve", "f.json", "--port", "http"], "flagctl serve: --port takes 0…65535, got 'http'"),
            (["serve", "f.json", "--fail-rate", "2"], "flagctl serve: --fail-rate takes a share between 0 and 1, got '2'; e.g. --fail-rate 0.2"),
            (["serve", "f.json", "--fault", "explode"], "flagctl serve: unknown fault 'explode'; choose hang, stall, close, reset-reused, garbage, endless, status:N[:RETRY], redirect:STATUS:URL, oversized[:BYTES], oversized-chunked[:BYTES], oversized-close[:BYTES]"),
            (["demo", "-x"], "flagctl demo: unknown option -x; options start with two dashes, see flagctl demo --help"),
            (["demo", "--timeout", "soon"], "flagctl demo: --timeout takes seconds from 0.001 to 60, got 'soon'; e.g. --timeout 0.5"),
            (["demo", "--bucketing", "md5"], "flagctl demo: --bucketing takes string, cbor, legacy-percent, not 'md5'"),
            (["eval", "--endpoint", "http://127.0.0.1:1/f", "--bucketing", "cbor"], "flagctl eval: --bucketing applies to rules evaluated here: --provider flagd"),
        ]
        for (arguments, expected) in cases {
            let (status, out) = await run(arguments)
            #expect(status == 64, "\(arguments)")
            #expect(out.err.first == expected, "\(arguments)")
            #expect(out.err.count == 2 && out.err[1].hasPrefix("usage: flagctl "), "\(arguments)")
            #expect(!out.err[0].contains("flagctl \(arguments[0]) ["), "the usage line is printed once: \(arguments)")
            #expect(out.out.isEmpty)
        }
    }

    @Test func parserDetails() throws {
        let parsed = try ArgumentParser.parse(
            ["--context=a=b", "--context", "c=d", "--json", "--", "--literal"],
            CommandSpec(
                name: "x", summary: "", positionals: ["ARG"],
                options: [.init(name: "context", value: "KV", help: "", repeatable: true), .init(name: "json", value: nil, help: "")],
                examples: []))
        #expect(parsed.all("context") == ["a=b", "c=d"])
        #expect(parsed.has("json"))
        #expect(parsed.positionals == ["--literal"])
        #expect(ArgumentParser.suggestion(for: "stat", among: ["state", "timeout"]) == "state")
        #expect(ArgumentParser.suggestion(for: "zzzzzz", among: ["state"]) == nil)
    }

    // MARK: eval

    @Test func evalOnlineThenOfflineFromTheSameState() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let state = TempDir()
        let arguments = [
            "eval", "--endpoint", server.flagsURL.absoluteString, "--context", "targetingKey=u1", "--context", "partner=auralink",
            "--context", "plan_tier=business", "--state", state.path, "--json",
        ] + budget
        let (online, onlineOut) = await run(arguments)
        #expect(online == 0, "\(onlineOut.out.prefix(2)) \(onlineOut.err)")
        let lines = jsonLines(onlineOut.out)
        #expect(lines.first?["status"] == "READY" && lines.first?["source"] == "network")
        let theme = lines.first { $0["flag"] == "plan_themeColor" }
        #expect(theme?["value"] == "#2C3E50" && theme?["source"] == "network" && theme?["reason"] == "TARGETING_MATCH")
        #expect(theme?["variant"] == "auralink-business" && theme?["version"] == "2025-08-04T10:00:00Z")
        #expect(lines.count == 1 + ServerDocument.seedExample.base.flags.count)

        // The service goes away: every connection is closed unanswered. (Not `stop()`: a test
        // running beside this one could bind the freed port and answer.)
        server.fault = .closeConnection
        let (offline, offlineOut) = await run(arguments)
        #expect(offline == 0)
        let again = jsonLines(offlineOut.out)
        #expect(again.first?["status"] == "ERROR" && again.first?["source"] == "fallback")
        #expect(again.first?["outcome"]?.stringValue?.contains("serving the fallback") == true)
        let cached = again.first { $0["flag"] == "plan_themeColor" }
        #expect(cached?["value"] == "#2C3E50" && cached?["source"] == "fallback" && cached?["reason"] == "CACHED")
    }

    /// A static host answers GET and refuses a POSTed context (501, as `python3 -m http.server`):
    /// `--method get` reads the document; without it the refusal is said and nothing is served.
    @Test func evalGetsAStaticDocumentWithMethodGet() async throws {
        let host = try StaticHost(files: ["/flags.json": #"{"meta_config_version": "static-1", "flags": {"new_checkout": {"value": true}, "theme": {"value": "dark"}}}"#])
        defer { host.stop() }
        let state = TempDir()
        let url = host.url("flags.json").absoluteString
        let (status, out) = await run(["eval", "--method", "get", "--endpoint", url, "--state", state.path, "--json"] + budget)
        #expect(status == 0, "\(out.err)")
        let lines = jsonLines(out.out)
        #expect(lines.first?["status"] == "READY" && lines.first?["source"] == "network")
        #expect(lines.first { $0["flag"] == "new_checkout" }?["value"] == true)
        #expect(lines.first { $0["flag"] == "theme" }?["value"] == "dark")
        // Again, from the same state: a conditional GET, answered 304.
        let (again, _) = await run(["eval", "--method", "get", "--endpoint", url, "--state", state.path, "--json"] + budget)
        #expect(again == 0)
        #expect(host.requests == ["GET /flags.json", "GET /flags.json"])

        let (posted, postedOut) = await run(["eval", "--endpoint", url, "--state", TempDir().path, "--json"] + budget)
        #expect(posted == 0, "the fallback (nothing) is printed")
        #expect(jsonLines(postedOut.out).first?["status"] == "ERROR")
        #expect(host.requests.last == "POST /flags.json")
        #expect(postedOut.err.contains { $0.contains("add --method get") }, "\(postedOut.err)")
    }

    /// Two static hosts as a set of services: each flag from the host that has it, the down host's flags from its own
    /// last good values, a mismatch on its own line, and a kill from the second host.
    @Test func evalCombinesSeveralServicesPerFlag() async throws {
        let a = try StaticHost(files: ["/flags.json": #"{"flags": {"a": "a", "shared": 1}}"#])
        let b = try StaticHost(files: ["/flags.json": #"{"flags": {"b": "b", "shared": 2}}"#])
        defer { a.stop() }
        let state = TempDir()
        let set = ["eval", "--method", "get", "--endpoint", a.url("flags.json").absoluteString, "--endpoint", b.url("flags.json").absoluteString,
            "--state", state.path] + budget
        let nameA = "127.0.0.1:\(a.url("x").port!)"
        let nameB = "127.0.0.1:\(b.url("x").port!)"
        let (status, out) = await run(set + ["--strategy", "first-match", "--json"])
        #expect(status == 0, "\(out.err)")
        var lines = jsonLines(out.out)
        #expect(lines.first { $0["flag"] == "a" }?["service"] == .string(nameA))
        #expect(lines.first { $0["flag"] == "b" }?["service"] == .string(nameB))
        #expect(lines.first { $0["flag"] == "shared" }?["value"] == 1 && lines.first { $0["flag"] == "shared" }?["service"] == .string(nameA))
        // B down: its flag from its own last good values, A's from the network.
        b.stop()
        a.set("/flags.json", #"{"flags": {"a": "a2", "shared": 1}}"#)
        let (down, downOut) = await run(set + ["--strategy", "first-match", "--json"])
        #expect(down == 0)
        lines = jsonLines(downOut.out)
        #expect(lines.first?["status"] == "ERROR")
        #expect(lines.first { $0["flag"] == "a" }?["value"] == "a2")
        #expect(lines.first { $0["flag"] == "b" }?["value"] == "b" && lines.first { $0["flag"] == "b" }?["reason"] == "CACHED")
        // Comparison: the table, then the mismatch as its own line.
        let c = try StaticHost(files: ["/flags.json": #"{"flags": {"shared": 2, "kill_switch": true}}"#])
        defer { c.stop() }
        let pair = ["eval", "--method", "get", "--endpoint", a.url("flags.json").absoluteString, "--endpoint", c.url("flags.json").absoluteString,
            "--state", TempDir().path] + budget
        let (_, compared) = await run(pair + ["--strategy", "comparison"])
        let nameC = "127.0.0.1:\(c.url("x").port!)"
        #expect(compared.out.contains { $0.hasPrefix("mismatch shared: ") && $0.contains("\(nameA)=1") && $0.contains("\(nameC)=2") }, "\(compared.out)")
        #expect(compared.out.first?.contains("KILL SWITCH ON") == true, "a kill from the second service kills")
    }

    @Test func evalHoldsAKillForEveryContextUntilTheServedContextReleasesIt() async throws {
        var killed = ServerDocument.seedExample
        killed.base.flags["kill_switch"] = FlagEntry(value: true)
        let server = try FlagServer(document: killed)
        defer { server.stop() }
        let state = TempDir()
        func eval(_ venue: String) async -> [String: FlagValue]? {
            let (status, out) = await run(
                ["eval", "--endpoint", server.flagsURL.absoluteString, "--context", "venue=\(venue)", "--state", state.path, "--json"] + budget)
            #expect(status == 0)
            return jsonLines(out.out).first
        }
        #expect(await eval("venue-7")?["kill_switch"] == true)
        // Another venue, offline, nothing stored for it: still killed.
        server.fault = .closeConnection
        let offline = await eval("venue-42")
        #expect(offline?["status"] == "ERROR" && offline?["kill_switch"] == true)
        let (_, text) = await run(["eval", "--endpoint", server.flagsURL.absoluteString, "--context", "venue=venue-1", "--state", state.path] + budget)
        #expect(text.out.first?.hasSuffix("KILL SWITCH ON: every flag reads its safe default") == true)
        // The service turns it off; a fetch for the venue served releases it.
        server.fault = nil
        server.document = .seedExample
        #expect(await eval("venue-42")?["kill_switch"] == false)
        server.fault = .closeConnection
        #expect(await eval("venue-7")?["kill_switch"] == true, "venue-7's own stored answer still kills it until it is fetched")
    }

    /// A fetch that could not be saved is not a success: shown, and exit 74.
    @Test func evalShowsAFailedSaveAndExits74() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let state = TempDir()
        try FileManager.default.createDirectory(at: state.url("flags.lkg"), withIntermediateDirectories: false)
        let (status, out) = await run(["eval", "--endpoint", server.flagsURL.absoluteString, "--state", state.path, "--json"] + budget)
        #expect(status == 74)
        #expect(out.err.contains { $0.hasPrefix("flagctl eval: not saved to \(state.url("flags.lkg").path)") })
        let header = jsonLines(out.out).first
        #expect(header?["status"] == "READY", "the values were fetched")
        #expect(header?["problems"]?.listValue?.isEmpty == false)
    }

    /// A fallback file set aside as unusable is said, not passed off as "nothing stored".
    @Test func evalShowsAFileSetAside() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        server.fault = .closeConnection
        let state = TempDir()
        try Data("not a fallback file".utf8).write(to: state.url("flags.lkg"))
        let (status, out) = await run(["eval", "--endpoint", server.flagsURL.absoluteString, "--state", state.path] + budget)
        #expect(status == 0, "serving the fallback because the network failed is not an error")
        #expect(out.err.contains { $0.contains("the fallback file was not used") && $0.contains("kept at \(state.url("flags.lkg").path).corrupt") })
        #expect(out.out.contains("(no flags: nothing fetched, and the fallback file could not be used — see above)"))
    }

    /// FATAL is an exit status of its own.
    @Test func evalExits77OnFatal() async throws {
        let server = try FlagServer(document: .seedExample, configuration: .init(requiredHeaders: ["Authorization": "Bearer right"]))
        defer { server.stop() }
        let (status, out) = await run(["eval", "--endpoint", server.flagsURL.absoluteString, "--header", "Authorization: Bearer wrong"] + budget)
        #expect(status == 77)
        #expect(out.out.first?.hasPrefix("status FATAL") == true)
        #expect(out.out.first?.contains("nothing more will be fetched") == true)
        let (help, helpOut) = await run(["eval", "--help"])
        let text = helpOut.out.joined(separator: "\n")
        #expect(help == 0 && text.contains("EXIT STATUS:\n") && text.contains("\n  77    FATAL") && text.contains("\n  74    fetched, but"))
    }

    @Test func textFromOutsideIsPrintedWithoutControlCharacters() {
        #expect(Formatting.printable("ok\u{1B}[31mred\nforged\r\u{7F}\u{85}") == "ok\\u{1B}[31mred\\u{A}forged\\u{D}\\u{7F}\\u{85}")
        #expect(Formatting.printable("ümlaut · fine") == "ümlaut · fine")
    }

    @Test func evalTableAndTimeout() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let (status, out) = await run(["eval", "--endpoint", server.flagsURL.absoluteString, "--context", "partner=zenithsat", "--context", "plan_tier=personal"] + budget)
        #expect(status == 0)
        #expect(out.out.first?.hasPrefix("status READY · network · fetched") == true)
        #expect(out.out.contains { $0.hasPrefix("FLAG ") && $0.contains("SOURCE") })
        #expect(out.out.contains { $0.hasPrefix("plan_displayName") && $0.contains("\"ZenithSat Home\"") && $0.contains("network") })
        server.fault = .hangBeforeHeaders
        let (timedOut, timedOutOut) = await run(["eval", "--endpoint", server.flagsURL.absoluteString, "--timeout", "0.3"])
        #expect(timedOut == 0)
        #expect(timedOutOut.out.first == "status ERROR · code_default · fetch failed (no answer within 300 ms); serving the fallback")
        #expect(timedOutOut.out.contains("(no flags: nothing fetched and nothing stored for this context)"))
    }

    @Test func evalWithASchemaRejectsABadPayloadAndKeepsTheFallback() async throws {
        var document = ServerDocument.seedExample
        let server = try FlagServer(document: document)
        defer { server.stop() }
        let state = TempDir()
        try Data(Self.schemaJSON.utf8).write(to: state.url("schema.json"))
        let arguments = ["eval", "--endpoint", server.flagsURL.absoluteString, "--schema", state.url("schema.json").path, "--state", state.path, "--json"] + budget
        let (first, firstOut) = await run(arguments)
        #expect(first == 0)
        #expect(jsonLines(firstOut.out).first?["status"] == "READY")
        document.base.flags["plan_themeColor"] = FlagEntry(value: "#12345G")
        server.document = document
        let (second, secondOut) = await run(arguments)
        #expect(second == 0)
        let lines = jsonLines(secondOut.out)
        #expect(lines.first?["status"] == "ERROR")
        #expect(lines.first?["outcome"]?.stringValue?.hasPrefix("payload rejected (flags.plan_themeColor: \"#12345G\" is not a hex-color)") == true)
        let theme = lines.first { $0["flag"] == "plan_themeColor" }
        #expect(theme?["value"] == "#7F8C8D" && theme?["source"] == "fallback")
        // A schema that cannot be read or parsed stops the command before any request.
        try Data("{}".utf8).write(to: state.url("bad.json"))
        let (unusable, unusableOut) = await run(["eval", "--endpoint", server.flagsURL.absoluteString, "--schema", state.url("bad.json").path])
        #expect(unusable == 65 && unusableOut.err.first?.contains("is unusable") == true)
        let (missing, _) = await run(["eval", "--endpoint", server.flagsURL.absoluteString, "--schema", state.url("none.json").path])
        #expect(missing == 66)
    }

    @Test func evalWithAURLTemplateAndHeaders() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let template = server.baseURL.absoluteString + "/flags/{venue}.json"
        let (status, out) = await run(["eval", "--endpoint", template, "--context", "venue=venue-42", "--header", "Authorization: Bearer t0k3n", "--json"] + budget)
        #expect(status == 0)
        #expect(jsonLines(out.out).first { $0["flag"] == "new_checkout" }?["value"] == true)
        #expect(server.requests.first?.headers["authorization"] == "Bearer t0k3n")
        #expect(!out.out.joined().contains("t0k3n"))
    }

    @Test func evalSpeaksEveryProvider() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let base = server.baseURL.absoluteString
        let context = ["--context", "targetingKey=u1", "--context", "partner=auralink", "--context", "plan_tier=business", "--json"]
        let cases: [(String, [String], String)] = [
            ("ofrep", ["--endpoint", base], "plan_themeColor"),
            ("launchdarkly", ["--endpoint", base, "--key", "mob-1"], "plan_themeColor"),
            ("firebase", ["--endpoint", base, "--key", "k", "--project", "1", "--app-id", "1:1:ios:1"], "plan_themeColor"),
            ("unleash", ["--endpoint", base, "--key", "u-key", "--app-name", "pos"], "plan_themeColor.payload"),
        ]
        for (provider, options, flag) in cases {
            let (status, out) = await run(["eval", "--provider", provider] + options + context + budget)
            #expect(status == 0, "\(provider): \(out.err)")
            let lines = jsonLines(out.out)
            #expect(lines.first?["status"] == "READY", "\(provider)")
            let theme = lines.first { $0["flag"] == .string(flag) }
            #expect(theme?["value"] == "#2C3E50", "\(provider): \(String(describing: theme))")
            #expect(lines.first?["missing_flags_off"] == .bool(provider == "unleash"), "\(provider)")
        }
        // The table says what an unlisted flag reads where the service leaves disabled flags out.
        let (_, table) = await run(["eval", "--provider", "unleash", "--endpoint", base, "--key", "u-key"] + budget)
        #expect(table.out.contains("(the service leaves disabled flags out: a flag not listed reads false)"))
    }

    /// `--provider ofrep` reads OFREP's environment variables (OFREP ADR-0007) beneath its
    /// options, and says what it could not use.
    @Test func evalReadsOFREPsEnvironmentVariables() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let base = server.baseURL.absoluteString
        let context = ["--context", "targetingKey=u1", "--context", "partner=auralink", "--context", "plan_tier=business", "--json"]
        let environment = [
            "OFREP_ENDPOINT": base, "OFREP_HEADERS": "Authorization=Bearer%20envt0ken,X-Team=pos,broken", "OFREP_TIMEOUT_MS": String(min(30 * TestTiming.scale, 60) * 1000),
        ]
        let (status, out) = await run(["eval", "--provider", "ofrep", "--header", "x-team: cli"] + context, environment: environment)
        #expect(status == 0, "\(out.err)")
        #expect(jsonLines(out.out).first { $0["flag"] == "plan_themeColor" }?["value"] == "#2C3E50")
        let request = try #require(server.requests.first)
        #expect(request.headers["authorization"] == "Bearer envt0ken")
        #expect(request.headers["x-team"] == "cli", "the option wins over the variable")
        #expect(out.err == ["flagctl eval: warning: OFREP_HEADERS entry 3 has no '=' between a name and a value; it is not used"])
        #expect(!(out.out + out.err).joined().contains("envt0ken"))
        // An option wins over OFREP_ENDPOINT; a timeout flagctl does not accept is a warning.
        let (optionStatus, optionOut) = await run(
            ["eval", "--provider", "ofrep", "--endpoint", base] + context,
            environment: ["OFREP_ENDPOINT": "http://127.0.0.1:9/nowhere", "OFREP_TIMEOUT_MS": "120000"])
        #expect(optionStatus == 0, "\(optionOut.err)")
        #expect(optionOut.err == ["flagctl eval: warning: OFREP_TIMEOUT_MS is not from 0.001 to 60 seconds; the default budget is used"])
        // No endpoint anywhere: a usage error that names the variable.
        let (missing, missingOut) = await run(["eval", "--provider", "ofrep"], environment: ["OFREP_ENDPOINT": "ftp://x"])
        #expect(missing == 64)
        #expect(missingOut.err.contains("flagctl eval: warning: OFREP_ENDPOINT is not an absolute http or https URL; it is not used"))
        #expect(missingOut.err.contains("flagctl eval: --endpoint is required, or OFREP_ENDPOINT: flagctl eval --provider ofrep --endpoint URL"))
        // Other providers do not read OFREP's variables.
        let (json, jsonOut) = await run(["eval"], environment: environment)
        #expect(json == 64 && jsonOut.err.first == "flagctl eval: --endpoint is required: flagctl eval --endpoint URL")
    }

    // MARK: serve

    @Test func serveLogsReloadsAndStops() async throws {
        let run = try await ServeRun.start(["--latency", "1"])
        let (file, captured) = (run.file, run.captured)
        let banner = try #require(captured.out.first)
        #expect(await eventually { captured.out.count >= 2 })
        #expect(captured.out[1].hasPrefix("a development and rehearsal server, not a production flag service; limits: 32 connections"))
        #expect(captured.out[1].contains("request 10 s, send 10 s, idle 5 s, log of the last 1,000 requests"))
        let base = try #require(banner.split(separator: " ").first { $0.hasPrefix("http://") }.map(String.init))
        let client = FlagFetcher(endpoint: .json(post: URL(string: base + "/flags")!), configuration: .loopback)
        defer { client.shutdown() }
        _ = await client.fetch(auraPersonal)
        #expect(await eventually { captured.out.contains { $0.contains("POST /flags ctx=\(auraPersonal.fingerprint.prefix(12)) 200") } })
        // Editing the file is picked up without a request.
        var changed = ServerDocument.seedExample
        changed.base.version = "2025-09-01T00:00:00Z"
        try Data(changed.jsonBytes()).write(to: file)
        #expect(await eventually { captured.out.contains { $0.hasSuffix("reloaded \(file.path) (version 2025-09-01T00:00:00Z)") } })
        try Data("{oops".utf8).write(to: file)
        #expect(await eventually { captured.err.contains { $0.contains("still serving the previous document") } })
        #expect(await run.stop() == 0)
        #expect(captured.out.last == "stopped after 1 requests")
    }

    @Test func serveAsLaunchDarklySaysItsRoutesAndAnswersItsPollingAndStream() async throws {
        let served = try await ServeRun.start(["--format", "launchdarkly"])
        let banner = try #require(served.captured.out.first)
        #expect(banner.contains("as LaunchDarkly's client-side service") && banner.contains("GET /meval/<context>"))
        #expect(await eventually { served.captured.out.contains { $0.hasPrefix("follow it: flagctl watch --provider launchdarkly") } })
        let base = try #require(banner.split(separator: " ").first { $0.hasPrefix("http://") }.map(String.init))
        let endpoint = FlagEndpoint.launchDarkly(mobileKey: "mob-test", baseURL: URL(string: base)!, streamBaseURL: nil)
        let client = FlagFetcher(endpoint: endpoint, configuration: .loopback)
        defer { client.shutdown() }
        guard case .fetched(let snapshot, _, _) = await client.fetch(auraPersonal) else {
            Issue.record("the LaunchDarkly polling form did not answer")
            return
        }
        #expect(snapshot.flags["kill_switch"]?.value == false)
        #expect(await served.stop() == 0)
        let (bad, badOut) = await run(["serve", "f.json", "--format", "unleash"])
        #expect(bad == 64 && badOut.err.first?.contains("--format takes json or launchdarkly") == true)
    }

    /// The serve log names routes and fingerprints, never values from the path, and cannot be
    /// forged or used to drive the terminal.
    @Test func serveLogsNoValuesAndCannotBeForged() async throws {
        let run = try await ServeRun.start()
        let captured = run.captured
        let port = try #require(captured.out.first?.split(separator: ":").last?.split(separator: " ").first.flatMap { UInt16($0) })
        let email = "alice@example.com"
        let ldContext = Data(#"{"kind":"user","key":"alice@example.com"}"#.utf8).base64EncodedString()
        for target in [
            "/flags/\(email).json", "/msdk/evalx/contexts/\(ldContext)", "/flags/a%0A2026-01-01T00:00:00Z%20GET%20forged.json",
            "/flags/x%1B%5B31mred.json", "/nowhere/\(email)",
        ] {
            let connection = try #require(RawConnection(port: port))
            connection.send("GET \(target) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            _ = connection.receive(timeout: 2_000)
        }
        #expect(await eventually { captured.out.count >= 6 })
        let log = captured.out.dropFirst()
        #expect(log.contains { $0.contains("GET /flags/<venue>.json ctx=") })
        #expect(log.contains { $0.contains("GET launchdarkly ctx=") })
        #expect(log.contains { $0.contains("GET <unknown path> ctx=- 404") })
        for line in log {
            #expect(!line.contains("alice") && !line.contains(ldContext.prefix(12)) && !line.contains("forged") && !line.contains("red"), "\(line)")
            #expect(!line.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "\(line.debugDescription)")
        }
        #expect(await run.stop() == 0)
    }

    @Test func serveRejectsMissingAndInvalidFiles() async throws {
        let dir = TempDir()
        let (missing, missingOut) = await run(["serve", dir.url("none.json").path])
        #expect(missing == 66 && missingOut.err.first?.contains("no such file") == true)
        try Data("[1]".utf8).write(to: dir.url("bad.json"))
        let (invalid, invalidOut) = await run(["serve", dir.url("bad.json").path])
        #expect(invalid == 65 && invalidOut.err.first?.contains("is not a flag document") == true)
        #expect(try ServeCommand.parseFault("status:429:120") == .status(429, retryAfter: "120"))
        #expect(try ServeCommand.parseFault("oversized:10") == .oversizedBody(bytes: 10))
        #expect(try ServeCommand.parseFault("oversized-chunked:10") == .oversizedChunkedBody(bytes: 10))
        #expect(try ServeCommand.parseFault("oversized-close:10") == .oversizedCloseDelimitedBody(bytes: 10))
        #expect(try ServeCommand.parseFault("endless") == .endlessChunkedBody)
        #expect(try ServeCommand.parseFault("redirect:307:http://127.0.0.1:9000/flags") == .redirect(status: 307, location: "http://127.0.0.1:9000/flags"))
        #expect(FlagServer.Fault.redirect(status: 307, location: "http://127.0.0.1:9000/flags").description == "redirect 307", "the log names no URL")
        for bad in ["redirect", "redirect:307", "redirect:200:http://h/x", "redirect:x:http://h/x", "redirect:302:/relative"] {
            #expect(throws: UsageError.self, "\(bad)") { try ServeCommand.parseFault(bad) }
        }
        let (slowBeat, slowBeatOut) = await run(["serve", dir.url("bad.json").path, "--heartbeat", "5"])
        #expect(slowBeat == 64 && slowBeatOut.err.first?.contains("--heartbeat takes milliseconds (10 or more)") == true)
        #expect(try ServeCommand.parseStreamFault("half-open") == .halfOpen)
        #expect(try ServeCommand.parseStreamFault("drop:3") == .dropAfter(events: 3))
        #expect(try ServeCommand.parseStreamFault("slow-heartbeat:60000") == .slowHeartbeat(.seconds(60)))
        for bad in ["drop", "drop:0", "drop:x", "slow-heartbeat", "slow-heartbeat:-5", "sideways"] {
            #expect(throws: UsageError.self, "\(bad)") { try ServeCommand.parseStreamFault(bad) }
        }
    }

    @Test(arguments: [SIGINT, SIGTERM])
    func theBuiltToolStopsCleanlyOnCtrlCAndSIGTERM(signal: Int32) async throws {
        guard let binary = builtProduct("flagctl") else {
            Issue.record("flagctl was not built next to the tests")
            return
        }
        let dir = TempDir()
        try Data(ServerDocument.seedExample.jsonBytes()).write(to: dir.url("flags.json"))
        let process = try ChildProcess(binary, ["serve", dir.url("flags.json").path], errors: .discard)
        let handle = process.output!
        // Read until the banner says it listens (the process writes unbuffered), then interrupt.
        let banner = try await blocking { () -> String in
            var text = ""
            while !text.contains("Ctrl-C stops") {
                let data = handle.availableData
                if data.isEmpty { break }
                text += String(decoding: data, as: UTF8.self)
            }
            return text
        }
        #expect(banner.contains("serving "))
        process.send(signal)
        // Bounded: a tool that lost the signal is killed and reported, never waited on forever.
        #expect(await eventually(within: TestTiming.scaled(.seconds(10))) { !process.isRunning }, "signal \(signal) right after the banner was lost")
        process.send(SIGKILL)
        let rest = try await blocking { () -> String in
            let text = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
            _ = process.waitUntilExit()
            return text
        }
        // The same line, whichever signal stopped it.
        #expect(process.termination?.succeeded == true, "\(banner)\(rest)")
        #expect(rest.contains("stopped after 0 requests"))
    }

    @Test func lintAndServeGiveMalformedJSONTheSameStatusWithLineAndColumn() async throws {
        let dir = TempDir()
        try Data("{\n  \"flags\": {\n    \"a\": tru\n  }\n}".utf8).write(to: dir.url("bad.json"))
        let (lint, lintOut) = await run(["lint", dir.url("bad.json").path])
        let (serve, serveOut) = await run(["serve", dir.url("bad.json").path])
        #expect(lint == 65 && serve == 65)
        #expect(lintOut.out.first?.contains("JSON unexpected byte 0xa at line 3, column 13") == true, "\(lintOut.out)")
        #expect(serveOut.err.first?.contains("at line 3, column 13") == true, "\(serveOut.err)")
        // Valid JSON that is no flag document: the same status.
        try Data("[1, 2]".utf8).write(to: dir.url("list.json"))
        #expect(await run(["lint", dir.url("list.json").path]).0 == 65)
        #expect(await run(["serve", dir.url("list.json").path]).0 == 65)
        // A document with violations is another matter: 1.
        try Data(#"{"flags": {"plan_themeColor": "nope"}}"#.utf8).write(to: dir.url("f.json"))
        try Data(Self.schemaJSON.utf8).write(to: dir.url("s.json"))
        #expect(await run(["lint", dir.url("f.json").path, "--schema", dir.url("s.json").path]).0 == 1)
    }

    @Test func serveWarnsWhenItListensBeyondLoopback() async throws {
        for host in ["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"] { #expect(ServeCommand.isLoopback(host), "\(host)") }
        for host in ["0.0.0.0", "192.168.1.20", "10.0.0.1", "127.0.0.256", "example.com", "128.0.0.1"] {
            #expect(!ServeCommand.isLoopback(host), "\(host)")
        }
        let dir = TempDir()
        try Data(ServerDocument.seedExample.jsonBytes()).write(to: dir.url("flags.json"))
        // A documentation address (TEST-NET-1), assigned to no interface: the warning comes before
        // the bind, which then fails — the test never listens beyond loopback.
        let (_, out) = await run(["serve", dir.url("flags.json").path, "--host", "192.0.2.1"], stop: StopSignal {})
        #expect(out.err.first?.hasPrefix("flagctl serve: warning: --host 192.0.2.1 is not a loopback address") == true, "\(out.err)")
        let (_, quiet) = await run(["serve", dir.url("flags.json").path, "--host", "127.0.0.1"], stop: StopSignal {})
        #expect(quiet.err.isEmpty)
    }

    // MARK: lint

    static let schemaJSON = #"""
        {"max_payload_bytes": 16384,
         "flags": {"plan_themeColor": {"type": "string", "format": "hex-color", "required": true},
                   "plan_displayName": {"type": "string", "maxLength": 40},
                   "plan_feature_list": {"type": "list", "items": {"type": "string", "enum": ["usage", "billing", "support_chat", "map", "status", "team"]}},
                   "kill_switch": {"type": "bool", "required": true}}}
        """#

    private func files(_ document: String) throws -> (TempDir, String, String) {
        let dir = TempDir()
        try Data(document.utf8).write(to: dir.url("flags.json"))
        try Data(Self.schemaJSON.utf8).write(to: dir.url("schema.json"))
        return (dir, dir.url("flags.json").path, dir.url("schema.json").path)
    }

    @Test func lintAcceptsTheSeedsDocument() async throws {
        let (dir, file, schema) = try files(String(decoding: ServerDocument.seedExample.jsonBytes(), as: UTF8.self))
        defer { withExtendedLifetime(dir) {} }
        let (status, out) = await run(["lint", file, "--schema", schema])
        #expect(status == 0)
        #expect(out.out.last == "ok: 7 flags, 5 rules, version 2025-08-04T10:00:00Z")
        #expect(out.out.contains { $0.contains("warning: 3 flags not in the schema") })
    }

    @Test func lintReportsEveryViolationWithItsPath() async throws {
        let document = #"""
            {
              "flags": { "plan_themeColor": "blue", "plan_displayName": "AuraLink Personal", "plan_feature_list": ["usage"] },
              "rules": [ { "name": "biz", "when": { "plan_tier": "business" },
                           "flags": { "plan_feature_list": ["usage", "teleport"], "plan_displayName": 7 } } ]
            }
            """#
        let (dir, file, schema) = try files(document)
        defer { withExtendedLifetime(dir) {} }
        let (status, out) = await run(["lint", file, "--schema", schema])
        #expect(status == 1)
        #expect(out.out == [
            "\(file): flags.kill_switch: required",
            "\(file): flags.plan_themeColor: \"blue\" is not a hex-color",
            "\(file): rules[0](biz).flags.plan_displayName: expected string, found int",
            "\(file): rules[0](biz).flags.plan_feature_list[1]: \"teleport\" is not one of [\"usage\",\"billing\",\"support_chat\",\"map\",\"status\",\"team\"]",
            "\(file): warning: no meta_config_version (flagctl lint --bump sets one)",
            "4 violations",
        ])
    }

    @Test func lintReportsBrokenJSONWithItsLineAndColumn() async throws {
        let (dir, file, _) = try files("{\"flags\": {\"a\": tru}}")
        defer { withExtendedLifetime(dir) {} }
        let (status, out) = await run(["lint", file, "--json"])
        #expect(status == 65)
        let lines = jsonLines(out.out)
        #expect(lines.first?["path"] == "document")
        #expect(lines.first?["message"] == "JSON unexpected byte 0x7d at line 1, column 20 (byte 19)")
        #expect(lines.last?["violations"] == 1)
    }

    @Test func lintBumpsTheVersionKeepingTheFormatting() async throws {
        let document = "{\n  \"meta_config_version\": \"2025-08-04T10:00:00Z\",\n  \"flags\": {\n    \"plan_themeColor\": \"#3498DB\",\n    \"kill_switch\": false\n  }\n}\n"
        let (dir, file, schema) = try files(document)
        defer { withExtendedLifetime(dir) {} }
        let (dry, dryOut) = await run(["lint", file, "--schema", schema, "--bump"])
        #expect(dry == 0 && dryOut.out.last?.hasSuffix("(not written; add --write)") == true)
        #expect(try String(contentsOfFile: file, encoding: .utf8) == document)
        let now = Date(timeIntervalSince1970: 1_790_000_000)
        let parsed = try ArgumentParser.parse([file, "--schema", schema, "--bump", "--write"], LintCommand.spec)
        let (console, captured) = Console.capturing()
        #expect(try LintCommand.run(parsed, console: console, now: now) == 0)
        let expected = document.replacingOccurrences(of: "2025-08-04T10:00:00Z", with: "2026-09-21T14:13:20Z")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == expected)
        #expect(captured.out.last == "meta_config_version → 2026-09-21T14:13:20Z (written)")
        // A document without a version gets one inserted.
        #expect(LintCommand.bump("{\"flags\": {}}", to: "V") == "{\n  \"meta_config_version\": \"V\",\"flags\": {}}")
        #expect(LintCommand.bump("{}", to: "V") == "{\"meta_config_version\":\"V\"}")
    }

    @Test func lintDoesNotWriteAFailingDocument() async throws {
        let (dir, file, schema) = try files("{\"flags\": {\"plan_themeColor\": \"nope\", \"kill_switch\": false}}")
        defer { withExtendedLifetime(dir) {} }
        let before = try String(contentsOfFile: file, encoding: .utf8)
        let (status, _) = await run(["lint", file, "--schema", schema, "--bump", "--write"])
        #expect(status == 1)
        #expect(try String(contentsOfFile: file, encoding: .utf8) == before)
    }

    @Test func lintInputErrors() async throws {
        let dir = TempDir()
        let (missing, _) = await run(["lint", dir.url("none.json").path])
        #expect(missing == 66)
        try Data("{\"flags\":{}}".utf8).write(to: dir.url("f.json"))
        try Data("{\"flags\":{\"a\":{\"type\":\"uuid\"}}}".utf8).write(to: dir.url("s.json"))
        let (badSchema, out) = await run(["lint", dir.url("f.json").path, "--schema", dir.url("s.json").path])
        #expect(badSchema == 65)
        #expect(out.err.first?.contains("unknown type uuid") == true)
    }
}

/// `flagctl serve` running in this process on the demo document, with its output captured,
/// until ``stop()`` — Ctrl-C as a call.
struct ServeRun {
    let directory: TempDir
    let file: URL
    let captured: CapturedOutput
    private let release: Locked<CheckedContinuation<Void, Never>?>
    private let serving: Task<Int32, Never>

    /// Starts `serve FILE extra…` and waits for its banner; FILE holds `text`, or the demo document.
    static func start(_ extra: [String] = [], text: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) async throws -> ServeRun {
        let directory = TempDir()
        let file = directory.url("flags.json")
        try (text.map { Data($0.utf8) } ?? Data(ServerDocument.seedExample.jsonBytes())).write(to: file)
        let release = Locked<CheckedContinuation<Void, Never>?>(nil)
        let stop = StopSignal {
            await withCheckedContinuation { continuation in release.withLock { $0 = continuation } }
        }
        let (console, captured) = Console.capturing()
        let serving = Task { await FlagCtl.run(["serve", file.path] + extra, console: console, signals: stop) }
        // The banner (after what is said of signing, when answers are signed).
        #expect(await eventually { captured.out.contains { $0.hasPrefix("serving ") } }, sourceLocation: sourceLocation)
        return ServeRun(directory: directory, file: file, captured: captured, release: release, serving: serving)
    }

    /// Stops it as Ctrl-C would; its exit status.
    func stop() async -> Int32 {
        _ = await eventually { release.withLock { $0 != nil } }
        release.withLock { $0?.resume() }
        return await serving.value
    }
}

/// `flagctl` with flagd definitions: lint, serve, eval.
@Suite("flagctl flagd")
struct FlagCtlFlagdTests {
    @Test func lintReportsEveryProblemWithItsPath() throws {
        let report = LintCommand.lint(Array(#"""
            {"flags": {"a": {"state": "ON", "variants": {"x": 1, "y": "z"}, "defaultVariant": "w"},
                       "b": {"state": "ENABLED", "variants": {"on": true}, "defaultVariant": "on", "targeting": {"nope": [1]}},
                       "c": {"state": "ENABLED", "variants": {"on": true}, "defaultVariant": "on", "targeting": {"$ref": "missing"}}}}
            """#.utf8), schema: nil)
        #expect(report.violations.map(\.path) == [
            "flags.a.state", "flags.a.variants", "flags.a.defaultVariant", "flags.b.targeting", "flags.c.targeting.$ref",
        ])
        let good = LintCommand.lint(Array(DemoCommand.localRules.utf8), schema: nil)
        #expect(good.violations.isEmpty && good.flags == 5 && good.rules == 2 && good.version == "rules-2025-08-04")
    }

    @Test func lintRefusesADocumentWithoutFlags() {
        let report = LintCommand.lint(Array(#"{"$schema": "https://flagd.dev/schema/v0/flags.json", "flags": 3}"#.utf8), schema: nil)
        #expect(report.violations.map(\.path) == ["flags"])
    }

    @Test func aFlagdFileIsToldFromOurs() throws {
        #expect(try FlagdFile.looksLike(FlagJSON.parse(DemoCommand.localRules)))
        #expect(!FlagdFile.looksLike(["flags": ["a": true, "b": ["x": 1]]]))
        #expect(FlagdFile.looksLike(["flags": []]))
    }

    @Test func theFlagdProviderNameMakesAFlagdEndpoint() throws {
        let endpoint = try EndpointChoice.make("flagd", url: "http://127.0.0.1:1/flagd/flags.json")
        #expect((endpoint.format as? FlagdEndpoint)?.bucketing == .highPrecision)
        let cbor = try EndpointChoice.make("flagd", url: "http://127.0.0.1:1/flagd/flags.json", bucketing: EndpointChoice.bucketing("cbor"))
        #expect((cbor.format as? FlagdEndpoint)?.bucketing == .cbor)
        #expect(try EndpointChoice.bucketing("string") == .highPrecision && EndpointChoice.bucketing(nil) == nil)
    }

    /// `--bucketing cbor` buckets as the reference evaluator does (openfeature-flagd-core 2.0.0
    /// computed these for the rules in FeatureFlagsTests' gherkin fixtures).
    @Test(arguments: [("string", "cbor-by-unit", "unit=user-1", "c"), ("cbor", "cbor-by-unit", "unit=user-1", "b"), ("cbor", "cbor-by-unit", "unit=é-42", "d"),
                      ("cbor", "cbor-shorthand", "targetingKey=user-2", "heads"), ("cbor", "cbor-shorthand", "targetingKey=user-3", "tails")])
    func evalBucketsByTheModeItIsGiven(mode: String, flag: String, context: String, expected: String) async throws {
        let rules = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("FeatureFlagsTests/LocalEvaluation/Fixtures/gherkin/flags.json")
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        try server.serveFlagd(Array(try Data(contentsOf: rules)))
        let state = TempDir()
        let (status, out) = await run([
            "eval", "--provider", "flagd", "--bucketing", mode, "--endpoint", server.baseURL.appendingPathComponent("flagd/flags.json").absoluteString,
            "--context", context.hasPrefix("targetingKey=") ? context : "targetingKey=t", "--context", context, "--state", state.path, "--json",
        ] + generousTimeout)
        #expect(status == 0, "\(out.err)")
        let line = jsonLines(out.out).first { $0["flag"]?.stringValue == flag }
        if mode == "string" {
            #expect(line?["value"]?.stringValue != nil)
        } else {
            #expect(line?["value"]?.stringValue == expected, "\(line ?? [:])")
        }
    }
}
