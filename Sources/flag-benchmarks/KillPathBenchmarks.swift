import FeatureFlags
import FeatureFlagsServices
import FlagServer
import Foundation

/// The kill path end to end on loopback, with real providers and a real FlagServer: the time
/// from the operator's flip to a read that returns the safe default, over a live change
/// stream and over a half-open one; and a reconnection storm after a server restart.
enum KillPathBenchmarks {
    static func run(_ report: Report, quick: Bool) async throws {
        try await liveStream(report, flips: quick ? 40 : 200)
        try await launchDarklyStream(report, flips: quick ? 40 : 200)
        try await halfOpen(report, lanes: quick ? 4 : 8, flipsPerLane: quick ? 3 : 25)
        try socketStorm(report, clients: 500)
        try await reconnectStorm(report, clients: 100)
    }

    /// `true` in the sample document; its code default `false` is the safe value under a kill.
    static let guarded = FlagKey("feature_flag_0", default: false)

    static func document(_ version: String, killed: Bool) -> ServerDocument {
        var flags = sampleFlags(20)
        flags["kill_switch"] = FlagEntry(value: .bool(killed))
        return ServerDocument(base: FlagDocument(version: version, flags: flags))
    }

    /// A provider with its change streams, its own fallback file, and its loop running.
    final class Client: Sendable {
        let provider: FeatureFlagProvider
        private let opened = Locked(0)
        private let directory = temporaryDirectory()
        private let loop: Task<Void, Never>

        convenience init(endpoint: URL, heartbeatDeadline: Duration = .seconds(45), name: String = "bench") {
            self.init(flagEndpoint: FlagEndpoint.json(post: endpoint), heartbeatDeadline: heartbeatDeadline, name: name)
        }

        init(flagEndpoint: FlagEndpoint, heartbeatDeadline: Duration = .seconds(45), name: String = "bench") {
            let opened = self.opened
            var configuration = FeatureFlagProvider.Configuration(eventHandler: { event in
                if event.kind == .streamOpened { opened.withLock { $0 += 1 } }
            })
            configuration.heartbeatDeadline = heartbeatDeadline
            provider = FeatureFlagProvider(
                context: EvaluationContext(targetingKey: name), fetcher: FlagFetcher(endpoint: flagEndpoint),
                store: LastKnownGoodStore(fileURL: directory.appendingPathComponent("flags.lkg")), configuration: configuration,
                reachability: AlwaysReachable(), lifecycle: AlwaysForeground())
            loop = Task { [provider] in await provider.run() }
        }

        /// How many times a stream (re)opened.
        var openings: Int { opened.withLock { $0 } }

        /// The safe default is served.
        var killed: Bool { provider.isKillSwitchActive && provider.value(KillPathBenchmarks.guarded) == false }

        func stop() async {
            provider.shutdown()
            await loop.value
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// Polls `condition` every 200 µs until it holds; false after `limit`.
    static func waitUntil(within limit: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + limit
        while !condition() {
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .microseconds(200))
        }
        return true
    }

    static func percentiles(_ samples: [Duration]) -> (p50: Double, p99: Double, worst: Double) {
        let sorted = samples.map { $0.seconds * 1_000 }.sorted()
        func at(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * p + 0.5))] }
        return (at(0.5), at(0.99), sorted.last ?? 0)
    }

    // MARK: Live stream

    /// Kill on, measured; kill off, waited for; `flips` times. No poll can help: the poll
    /// interval is 5 minutes.
    static func liveStream(_ report: Report, flips: Int) async throws {
        report.section("Kill path — flip to a read of the safe default, live change stream, \(flips) flips on loopback")
        let server = try FlagServer(document: document("0", killed: false))
        defer { server.stop() }
        let client = Client(endpoint: server.flagsURL)
        let (latencies, _) = try await flipKills(server: server, client: client, flips: flips)
        let polls = server.requests.filter { $0.route != "GET /events" && $0.flagConfigEtag == nil }.count
        await client.stop()
        addFlipRows(report, "live stream: flip → safe default read", latencies)
        report.note("fetches without a stream event's metadata (the first, and reconnections' only): \(polls)")
    }

    /// The p50 row and the p99 row (budget 250 ms) of a stream's flip latencies.
    static func addFlipRows(_ report: Report, _ name: String, _ latencies: [Duration]) {
        let figures = percentiles(latencies)
        report.add(.init(section: "kill", name: "\(name), p50", value: figures.p50, unit: "ms"))
        report.add(
            .init(section: "kill", name: "\(name), p99", value: figures.p99, unit: "ms", budget: "≤ 250 ms", passed: figures.p99 <= 250))
    }

    /// Waits for `client`'s stream to open, then flips `server`'s kill switch on and off `flips`
    /// times: the time from each flip on to a read of the safe default, and how many requests
    /// the server saw during the flips. The client is stopped when a flip fails.
    static func flipKills(server: FlagServer, client: Client, flips: Int) async throws -> (latencies: [Duration], requests: Int) {
        guard await waitUntil({ client.openings >= 1 && server.streamCount == 1 && !client.provider.isFetching }) else {
            await client.stop()
            throw BenchmarkError("the change stream did not open")
        }
        let requests = server.requestCount
        var latencies: [Duration] = []
        for flip in 1...flips {
            let start = ContinuousClock.now
            server.document = document("kill-\(flip)", killed: true)
            guard await waitUntil({ client.killed }) else {
                await client.stop()
                throw BenchmarkError("flip \(flip): the kill did not arrive within 10 s")
            }
            latencies.append(ContinuousClock.now - start)
            server.document = document("fixed-\(flip)", killed: false)
            guard await waitUntil({ !client.provider.isKillSwitchActive }), await waitUntil({ !client.provider.isFetching }) else {
                await client.stop()
                throw BenchmarkError("flip \(flip): the kill did not end")
            }
        }
        return (latencies, server.requestCount - requests)
    }

    /// The same over LaunchDarkly's mobile stream (FlagServer's `/meval`): the kill comes as a
    /// `patch` carrying the flag's new value, applied without a request.
    static func launchDarklyStream(_ report: Report, flips: Int) async throws {
        report.section("Kill path — the same over LaunchDarkly's stream (a patch turns kill_switch on), \(flips) flips on loopback")
        let server = try FlagServer(document: document("0", killed: false))
        defer { server.stop() }
        let endpoint = FlagEndpoint.launchDarkly(mobileKey: "mob-bench", baseURL: server.baseURL, streamBaseURL: server.baseURL)
        let client = Client(flagEndpoint: endpoint)
        let (latencies, sent) = try await flipKills(server: server, client: client, flips: flips)
        await client.stop()
        addFlipRows(report, "LaunchDarkly stream: patch → safe default read", latencies)
        report.note("requests during the \(flips * 2) flips (the stream carries the values): \(sent)")
    }

    // MARK: Half-open stream

    /// The server keeps every stream open and sends nothing (no events, no heartbeats). The
    /// client's heartbeat deadline closes the deaf connection and fetches at once, then
    /// reconnects (to another deaf stream) after its jitter; the flip comes at a uniformly
    /// random moment within one deadline after the stream opened — sometimes while the client
    /// waits to reconnect. The deadline is longer than the first reconnection delay (1 s), as
    /// the default (45 s) is. Lanes run in parallel, each with its own server and client.
    static func halfOpen(_ report: Report, lanes: Int, flipsPerLane: Int) async throws {
        let deadline = Duration.milliseconds(1_500)
        report.section(
            "Kill path — half-open stream (heartbeat deadline \(deadline.milliseconds) ms), \(lanes * flipsPerLane) flips in \(lanes) parallel lanes")
        let results = try await withThrowingTaskGroup(of: (kills: [Duration], fetches: [Duration]).self) { group in
            for lane in 0..<lanes {
                group.addTask { try await halfOpenLane(lane, flips: flipsPerLane, deadline: deadline) }
            }
            var all: (kills: [Duration], fetches: [Duration]) = ([], [])
            for try await result in group {
                all.kills += result.kills
                all.fetches += result.fetches
            }
            return all
        }
        let kills = percentiles(results.kills)
        let fetch = percentiles(results.fetches)
        let bound = deadline.seconds * 1_000 + fetch.worst
        report.add(.init(section: "kill", name: "half-open: flip → safe default read, p50", value: kills.p50, unit: "ms"))
        report.add(
            .init(section: "kill", name: "half-open: flip → safe default read, p99", value: kills.p99, unit: "ms",
                  budget: String(format: "≤ deadline + one fetch (%.0f ms)", bound), passed: kills.p99 <= bound))
        report.note(String(format: "one fetch (changed document, 200) in the same lanes: p50 %.1f ms, worst %.1f ms", fetch.p50, fetch.worst))
    }

    private static func halfOpenLane(_ lane: Int, flips: Int, deadline: Duration) async throws -> (kills: [Duration], fetches: [Duration]) {
        let server = try FlagServer(document: document("0", killed: false))
        defer { server.stop() }
        server.streamFault = .halfOpen
        let client = Client(endpoint: server.flagsURL, heartbeatDeadline: deadline, name: "lane-\(lane)")
        var kills: [Duration] = []
        var fetches: [Duration] = []
        var seen = 0
        for flip in 1...flips {
            // A fresh connection (its opening, and the fetch it asked for, done).
            guard await waitUntil({ client.openings > seen && !client.provider.isFetching }) else {
                await client.stop()
                throw BenchmarkError("lane \(lane): the stream did not reopen")
            }
            seen = client.openings
            try? await Task.sleep(for: .microseconds(Int64.random(in: 0..<Int64(deadline.milliseconds * 1_000))))
            let start = ContinuousClock.now
            server.document = document("kill-\(lane)-\(flip)", killed: true)
            guard await waitUntil({ client.killed }) else {
                await client.stop()
                throw BenchmarkError("lane \(lane), flip \(flip): the kill did not arrive within 10 s")
            }
            kills.append(ContinuousClock.now - start)
            _ = await waitUntil({ !client.provider.isFetching })
            server.document = document("fixed-\(lane)-\(flip)", killed: false)
            let fetchStart = ContinuousClock.now
            guard case .updated = await client.provider.refresh() else {
                await client.stop()
                throw BenchmarkError("lane \(lane), flip \(flip): the fetch that ends the kill failed")
            }
            fetches.append(ContinuousClock.now - fetchStart)
        }
        await client.stop()
        return (kills, fetches)
    }

    // MARK: Reconnection storm

    /// `clients` real providers with open streams; the server goes down (port held:
    /// connections refused) and comes back with a new document. Each client reconnects after
    /// its own full-jitter delay, and fetches on reconnection. (Hundreds of providers in one
    /// process measure the process more than the server: the 500-client storm below uses
    /// plain sockets with the same reconnection schedule.)
    static func reconnectStorm(_ report: Report, clients count: Int) async throws {
        report.section("Reconnection storm — \(count) providers with open streams, server restarted")
        raiseDescriptorLimit(to: 8 * count + 256)
        let configuration = FlagServer.Configuration(maxConnections: 4 * count, maxLoggedRequests: 8 * count, maxStreams: count + 12)
        let server = try FlagServer(document: document("before", killed: false), configuration: configuration)
        let clients = (0..<count).map { Client(endpoint: server.flagsURL, name: "client-\($0)") }
        func stopAll() async { for client in clients { await client.stop() } }
        guard await waitUntil(within: .seconds(120), { server.streamCount == count && clients.allSatisfy { $0.openings >= 1 } }) else {
            server.stop()
            await stopAll()
            throw BenchmarkError("only \(server.streamCount) of \(count) streams opened")
        }
        let port = server.port
        guard let hold = server.stopHoldingPort() else { throw BenchmarkError("port \(port) could not be held") }
        // Down long enough for every client to notice and fail a reconnection or two.
        try? await Task.sleep(for: .milliseconds(500))
        let restarted = try FlagServer(document: document("after", killed: true), configuration: .init(
            port: port, maxConnections: configuration.maxConnections, maxLoggedRequests: configuration.maxLoggedRequests,
            maxStreams: configuration.maxStreams), returningTo: hold)
        defer { restarted.stop() }
        let start = ContinuousClock.now
        let back = await waitUntil(within: .seconds(120), { restarted.streamCount == count && clients.allSatisfy(\.killed) })
        let elapsed = ContinuousClock.now - start
        let refused = restarted.requests.filter { $0.status == 503 }.count
        let rate = restarted.connectionRate
        await stopAll()
        guard back else { throw BenchmarkError("after the restart only \(restarted.streamCount) of \(count) streams came back") }
        report.add(
            .init(section: "storm", name: "restart → all \(count) streams back and the new document read", value: elapsed.seconds * 1_000, unit: "ms"))
        report.add(.init(section: "storm", name: "server: peak connections accepted in one second", value: Double(rate.peakPerSecond), unit: "count"))
        report.add(.init(section: "storm", name: "server: connections accepted after the restart", value: Double(rate.total), unit: "count"))
        report.add(.init(section: "storm", name: "answers 503 (server full) during the storm", value: Double(refused), unit: "count", budget: "= 0", passed: refused == 0))
    }

    /// 500 change streams as plain sockets; the server goes down for 500 ms (connections
    /// refused) and comes back. Each client reconnects on the providers' schedule: full
    /// jitter, a ceiling of 1 s doubling per failed attempt (up to 60 s), and when connected
    /// sends its stream request. The server's connections per second show how the jitter
    /// spreads the storm: without it, all 500 would arrive within milliseconds.
    static func socketStorm(_ report: Report, clients count: Int) throws {
        report.section("Reconnection storm — \(count) change streams (plain sockets, the providers' jitter), server restarted")
        raiseDescriptorLimit(to: 4 * count + 256)
        let configuration = FlagServer.Configuration(maxConnections: 2 * count, maxLoggedRequests: 4 * count, maxStreams: count + 12)
        let server = try FlagServer(document: document("before", killed: false), configuration: configuration)
        let request = Array("GET /events HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n".utf8)
        var sockets = [Int32](repeating: -1, count: count)
        defer { for fd in sockets where fd >= 0 { close(fd) } }
        func open(_ i: Int, port: UInt16) -> Bool {
            guard let fd = LoopbackSocket.connect(port: port) else { return false }
            sockets[i] = fd
            _ = request.withUnsafeBytes { LoopbackSocket.send(fd, $0) }
            return true
        }
        let opening = ContinuousClock.now + .seconds(60)
        var next = 0
        while next < count, ContinuousClock.now < opening {
            for i in next..<min(next + 16, count) where !open(i, port: server.port) { throw BenchmarkError("cannot open stream \(i + 1)") }
            next = min(next + 16, count)
            while server.streamCount < next, ContinuousClock.now < opening { usleep(1_000) }
        }
        guard server.streamCount == count else { throw BenchmarkError("only \(server.streamCount) of \(count) streams opened") }
        let port = server.port
        guard let hold = server.stopHoldingPort() else { throw BenchmarkError("port \(port) could not be held") }
        let restartAt = ContinuousClock.now + .milliseconds(500)
        // Every client notices the drop now (its stream ends) and schedules its reconnection.
        var failures = [Int](repeating: 0, count: count)
        var due = [ContinuousClock.Instant?](repeating: nil, count: count)
        func schedule(_ i: Int) {
            failures[i] += 1
            let ceiling = min(1.0 * pow(2, Double(failures[i] - 1)), 60)
            due[i] = ContinuousClock.now + .milliseconds(Int64(Double.random(in: 0...ceiling) * 1_000))
        }
        for i in 0..<count {
            close(sockets[i])
            sockets[i] = -1
            schedule(i)
        }
        var restarted: FlagServer?
        defer { restarted?.stop() }
        let deadline = ContinuousClock.now + .seconds(300)
        var back = 0
        var startedAt = ContinuousClock.now
        while back < count, ContinuousClock.now < deadline {
            if restarted == nil, ContinuousClock.now >= restartAt {
                restarted = try FlagServer(
                    document: document("after", killed: true),
                    configuration: .init(
                        port: port, maxConnections: configuration.maxConnections, maxLoggedRequests: configuration.maxLoggedRequests,
                        maxStreams: configuration.maxStreams),
                    returningTo: hold)
                startedAt = ContinuousClock.now
            }
            let now = ContinuousClock.now
            for i in 0..<count {
                guard let when = due[i], when <= now else { continue }
                if open(i, port: port) {
                    due[i] = nil
                    back += 1
                } else {
                    schedule(i)
                }
            }
            usleep(500)
        }
        guard let restarted, back == count else { throw BenchmarkError("only \(back) of \(count) clients reconnected") }
        guard waitFor(.seconds(30), { restarted.streamCount == count }) else {
            throw BenchmarkError("the restarted server holds \(restarted.streamCount) of \(count) streams")
        }
        let elapsed = ContinuousClock.now - startedAt
        let rate = restarted.connectionRate
        let refused = restarted.requests.filter { $0.status == 503 }.count
        let attempts = failures.reduce(0, +)
        report.add(.init(section: "storm", name: "restart → all \(count) streams open again", value: elapsed.seconds * 1_000, unit: "ms"))
        report.add(.init(section: "storm", name: "server: peak connections accepted in one second", value: Double(rate.peakPerSecond), unit: "count"))
        report.add(.init(section: "storm", name: "refused attempts while it was down, all clients", value: Double(attempts - count), unit: "count"))
        report.add(.init(section: "storm", name: "answers 503 (server full)", value: Double(refused), unit: "count", budget: "= 0", passed: refused == 0))
    }

    /// Polls `condition` every millisecond until it holds; false after `limit`.
    private static func waitFor(_ limit: Duration, _ condition: () -> Bool) -> Bool {
        let end = ContinuousClock.now + limit
        while !condition() {
            if ContinuousClock.now >= end { return false }
            usleep(1_000)
        }
        return true
    }
}
