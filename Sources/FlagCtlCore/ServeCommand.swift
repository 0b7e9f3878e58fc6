import FeatureFlags
import FeatureFlagsFlagd
import FlagServer
import Foundation

/// `flagctl serve`: a loopback flag server in the foreground, for development and for
/// rehearsing outages. Logs every request, reloads the file on change, stops on Ctrl-C.
enum ServeCommand {
    static let spec = CommandSpec(
        name: "serve", summary: "run a loopback flag server on a flag document",
        positionals: ["FILE"],
        options: [
            .init(name: "port", value: "N", help: "port to listen on (default: any free port)"),
            .init(name: "host", value: "ADDRESS", help: "IPv4 address to bind (default 127.0.0.1)"),
            .init(name: "latency", value: "MS", help: "delay every answer by MS milliseconds"),
            .init(name: "fail-rate", value: "P", help: "answer this share of requests (0…1) with 503"),
            .init(
                name: "fault", value: "NAME",
                help: "hang | stall | close | reset-reused | garbage | endless | status:N[:RETRY] | redirect:STATUS:URL | oversized[:BYTES] | oversized-chunked[:BYTES] | oversized-close[:BYTES]"),
            .init(name: "path-attribute", value: "NAME", help: "attribute set by GET /flags/<value>.json (default venue)"),
            .init(
                name: "stream-fault", value: "NAME",
                help: "for GET /events change streams: drop:N (close after N events) | half-open | slow-heartbeat:MS"),
            .init(name: "heartbeat", value: "MS", help: "comment on idle change streams every MS milliseconds (default 15000)"),
            .init(
                name: "format", value: "NAME",
                help: "the service to rehearse: json (default) or launchdarkly (its polling and stream forms; every form is served either way)"),
        ] + SigningCommands.signWithOptions,
        examples: [
            "flagctl serve flags.json --port 8080",
            "flagctl serve flags.json --latency 2500 --fail-rate 0.2",
            "flagctl serve flags.json --fault status:503:120",
            "flagctl serve flags.json --stream-fault half-open",
            "flagctl serve flags.json --format launchdarkly --port 8080",
        ],
        exitStatuses: [
            (0, "stopped (Ctrl-C or SIGTERM)"), (64, "usage error"),
            (65, "not a flag document: not JSON (line and column given), or neither format"), (66, "no such file"),
        ])

    static func run(_ arguments: ParsedArguments, console: Console, stop: StopSignal) async throws -> Int32 {
        let file = arguments.positionals[0]
        let signing = try SigningCommands.signing(arguments)
        var configuration = FlagServer.Configuration()
        if let text = arguments.value("port") {
            guard let port = UInt16(text) else { throw UsageError(message: "--port takes 0…65535, got '\(text)'") }
            configuration.port = port
        }
        if let host = arguments.value("host") {
            configuration.host = host
            if !isLoopback(host) {
                console.err(
                    "flagctl serve: warning: --host \(Formatting.printable(host)) is not a loopback address: anyone who can reach it "
                        + "can read every flag and context sent to it; this is a development server, without TLS or authentication")
            }
        }
        if let name = arguments.value("path-attribute") { configuration.pathAttribute = name }
        let latency = try arguments.value("latency").map { text throws(UsageError) -> Duration in
            guard let ms = Int64(text), ms >= 0 else { throw UsageError(message: "--latency takes milliseconds, got '\(text)'") }
            return .milliseconds(ms)
        }
        let failRate = try arguments.value("fail-rate").map { text throws(UsageError) -> Double in
            guard let p = Double(text), (0...1).contains(p) else {
                throw UsageError(message: "--fail-rate takes a share between 0 and 1, got '\(text)'; e.g. --fail-rate 0.2")
            }
            return p
        }
        let fault = try arguments.value("fault").map(parseFault)
        let streamFault = try arguments.value("stream-fault").map(parseStreamFault)
        if let text = arguments.value("heartbeat") {
            guard let ms = Int64(text), ms >= 10 else { throw UsageError(message: "--heartbeat takes milliseconds (10 or more), got '\(text)'") }
            configuration.streamHeartbeat = .milliseconds(ms)
        }
        let format = arguments.value("format") ?? "json"
        guard format == "json" || format == "launchdarkly" else {
            throw UsageError(message: "--format takes json or launchdarkly, not '\(Formatting.printable(format))'")
        }
        let waitForStop = stop.arm()
        guard FileManager.default.fileExists(atPath: file) else {
            console.err("flagctl serve: no such file: \(file)")
            return 66
        }
        if let flagd = flagdDocument(at: file) {
            return try await serveFlagd(
                flagd, file: file, configuration: configuration, signing: signing, console: console, waitForStop: waitForStop)
        }
        let server: FlagServer
        do {
            server = try FlagServer(
                file: file, configuration: configuration,
                onRequest: { record in console.out(logLine(record)) },
                onReload: { result in
                    switch result {
                    case .success(let document):
                        console.out("\(Formatting.timestamp()) reloaded \(file) (version \(document.base.version ?? "-"))")
                    case .failure(let error):
                        console.err("\(Formatting.timestamp()) reload of \(file) failed, still serving the previous document: \(error.message)")
                    }
                })
        } catch let error as FlagError {
            console.err("flagctl serve: \(file) is not a flag document: \(error.message)")
            return 65
        }
        if let signing { console.out(try SigningCommands.sign(server, signing)) }
        if let latency { server.latency = latency }
        if let failRate { server.failRate = failRate }
        server.fault = fault
        server.streamFault = streamFault
        if format == "launchdarkly" {
            console.out(
                "serving \(file) on \(server.baseURL.absoluteString) as LaunchDarkly's client-side service — polling GET /msdk/evalx/contexts/<context>"
                    + " and REPORT /msdk/evalx/context, stream GET /meval/<context> and REPORT /meval (put, then patch/delete per change); Ctrl-C stops")
            console.out("follow it: flagctl watch --provider launchdarkly --endpoint \(server.baseURL.absoluteString) --key any")
        } else {
            console.out("serving \(file) on \(server.baseURL.absoluteString) — POST /flags, GET /flags/<\(configuration.pathAttribute)>.json, GET /events (changes); Ctrl-C stops")
        }
        let limits = server.configuration
        console.out(
            "a development and rehearsal server, not a production flag service; limits: \(limits.maxConnections) connections"
                + " (the one stalled longest gives way), request \(limits.requestTimeout.seconds.formatted()) s,"
                + " send \(limits.sendTimeout.seconds.formatted()) s, idle \(limits.idleTimeout.seconds.formatted()) s,"
                + " log of the last \(limits.maxLoggedRequests.formatted()) requests")
        if let fault { console.out("fault: \(fault)") }
        if let streamFault { console.out("stream fault: \(streamFault)") }
        await waitForStop()
        server.stop()
        console.out("stopped after \(server.requestCount) requests")
        return 0
    }

    /// Whether `host` names this machine only: `localhost`, 127.0.0.0/8 or ::1.
    static func isLoopback(_ host: String) -> Bool {
        let name = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
        if name == "localhost" || name == "::1" || name == "0:0:0:0:0:0:0:1" { return true }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// The bytes of `file` when it holds flagd flag definitions, else nil.
    static func flagdDocument(at file: String) -> [UInt8]? {
        guard let bytes = try? FileIO.read(file), let value = try? FlagJSON.parse(bytes), FlagdFile.looksLike(value) else { return nil }
        return bytes
    }

    /// Serves a flagd definitions file at `/flagd/flags.json` (read once: restart to publish
    /// a change), with the change stream at `/events`.
    static func serveFlagd(
        _ bytes: [UInt8], file: String, configuration: FlagServer.Configuration, signing: SigningCommands.Signing?,
        console: Console, waitForStop: () async -> Void
    ) async throws -> Int32 {
        let server = try FlagServer(
            document: ServerDocument(base: FlagDocument(flags: [:])), configuration: configuration,
            onRequest: { record in console.out(logLine(record)) })
        let definitions: FlagdDefinitions?
        do {
            definitions = try server.serveFlagdDefinitions(bytes)
        } catch {
            server.stop()
            console.err("flagctl serve: \(file) is not a flagd definitions file: \(error.problems.first?.description ?? "unreadable")")
            return 65
        }
        if let signing { console.out(try SigningCommands.sign(server, signing)) }
        for problem in definitions?.problems ?? [] { console.err("flagctl serve: \(file): \(problem) (served as PARSE_ERROR)") }
        if let definitions, let document = try? FlagJSON.parse(bytes) {
            for departure in FlagdSchemaCheck.check(document, besides: definitions.problems).departures {
                console.err("flagctl serve: \(file): warning: \(departure) (flagd's schema; evaluated as flagd evaluates it)")
            }
        }
        console.out(
            "serving flagd definitions \(file) (\(definitions?.keys.count ?? 0) flags) on \(server.baseURL.absoluteString)"
                + " — GET /flagd/flags.json (ETag), GET /events (changes); evaluate with flagctl eval --provider flagd; Ctrl-C stops")
        console.out("a development and rehearsal server, not a production flag service; the file is read once (restart to publish a change)")
        await waitForStop()
        server.stop()
        console.out("stopped after \(server.requestCount) requests")
        return 0
    }

    static func parseFault(_ text: String) throws(UsageError) -> FlagServer.Fault {
        let parts = text.split(separator: ":").map(String.init)
        switch parts.first {
        case "hang": return .hangBeforeHeaders
        case "stall": return .stallMidBody
        case "close": return .closeConnection
        case "reset-reused": return .resetReusedConnections
        case "garbage": return .garbageBody
        case "endless": return .endlessChunkedBody
        case "status":
            guard parts.count >= 2, let status = Int(parts[1]), (100...599).contains(status) else {
                throw UsageError(message: "--fault status:N needs a status code, e.g. status:503 or status:429:120")
            }
            return .status(status, retryAfter: parts.count > 2 ? parts[2...].joined(separator: ":") : nil)
        case "redirect":
            let split = text.split(separator: ":", maxSplits: 2).map(String.init)
            guard split.count == 3, let status = Int(split[1]), [301, 302, 303, 307, 308].contains(status),
                let url = URL(string: split[2]), url.scheme != nil, url.host != nil
            else {
                throw UsageError(message: "--fault redirect:STATUS:URL needs a redirect status and an absolute URL, e.g. redirect:307:http://127.0.0.1:9000/flags")
            }
            return .redirect(status: status, location: split[2])
        case "oversized", "oversized-chunked", "oversized-close":
            let bytes = parts.count > 1 ? Int(parts[1]) : 2 << 20
            guard let bytes, bytes > 0 else { throw UsageError(message: "--fault \(parts[0]):BYTES needs a byte count") }
            switch parts[0] {
            case "oversized-chunked": return .oversizedChunkedBody(bytes: bytes)
            case "oversized-close": return .oversizedCloseDelimitedBody(bytes: bytes)
            default: return .oversizedBody(bytes: bytes)
            }
        default:
            throw UsageError(message: "unknown fault '\(Formatting.printable(text))'; choose hang, stall, close, reset-reused, garbage, endless, status:N[:RETRY], redirect:STATUS:URL, oversized[:BYTES], oversized-chunked[:BYTES], oversized-close[:BYTES]")
        }
    }

    static func parseStreamFault(_ text: String) throws(UsageError) -> FlagServer.StreamFault {
        let parts = text.split(separator: ":", maxSplits: 1).map(String.init)
        switch parts.first {
        case "half-open": return .halfOpen
        case "drop":
            guard parts.count == 2, let n = Int(parts[1]), n > 0 else {
                throw UsageError(message: "--stream-fault drop:N needs a number of events, e.g. drop:1")
            }
            return .dropAfter(events: n)
        case "slow-heartbeat":
            guard parts.count == 2, let ms = Int64(parts[1]), ms > 0 else {
                throw UsageError(message: "--stream-fault slow-heartbeat:MS needs milliseconds, e.g. slow-heartbeat:60000")
            }
            return .slowHeartbeat(.milliseconds(ms))
        default:
            throw UsageError(message: "unknown stream fault '\(Formatting.printable(text))'; choose drop:N, half-open, slow-heartbeat:MS")
        }
    }

    /// `2026-11-21T14:00:00Z POST /flags ctx=3f2a… 200 1234B 3ms`.
    static func logLine(_ record: FlagServer.RequestRecord) -> String {
        let context = record.contextFingerprint.map { "ctx=" + $0.prefix(12) } ?? "ctx=-"
        let status = record.status.map(String.init) ?? "---"
        let ms = record.duration.map { String($0.milliseconds) } ?? "-"
        let fault = record.fault.map { " fault=\($0)" } ?? ""
        return Formatting.printable("\(Formatting.timestamp()) \(record.route) \(context) \(status) \(record.bytesSent)B \(ms)ms\(fault)")
    }
}
