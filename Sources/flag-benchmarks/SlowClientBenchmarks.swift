import FeatureFlags
import FlagServer
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A normal client's latency while 32 connections — every place the server has — send
/// their header one byte at a time and reconnect whenever they are closed, against the same
/// client's latency with no attack, measured in the same run. Every answer must be 200.
enum SlowClientBenchmarks {
    static func run(_ report: Report, quick: Bool) throws {
        let requests = quick ? 200 : 1_000
        report.section("FlagServer under a slow-header attack — \(requests.formatted()) requests from a normal client, one every 5 ms")
        let server = try FlagServer(document: ServerDocument(base: FlagDocument(version: "bench", flags: sampleFlags(20))))
        defer { server.stop() }
        let floor = try measure(requests, port: server.port)
        let attack = SlowHeaderAttack(port: server.port, connections: server.configuration.maxConnections)
        defer { attack.stop() }
        let deadline = Date().addingTimeInterval(10)
        while server.connectionCount < server.configuration.maxConnections, Date() < deadline { usleep(10_000) }
        guard server.connectionCount >= server.configuration.maxConnections else {
            throw BenchmarkError("the attack did not take every place (\(server.connectionCount) connections)")
        }
        let attacked = try measure(requests, port: server.port)
        let ratio = attacked.p99 / max(floor.p99, 1)
        report.add(.init(section: "server", name: "normal client p99, no attack", value: floor.p99 / 1_000, unit: "µs"))
        report.add(
            .init(
                section: "server", name: "normal client p99 during a 32-connection slow-header attack", value: attacked.p99 / 1_000,
                unit: "µs", floor: "p99 without attack", ratio: ratio, budget: "≤ 10×", passed: ratio <= 10))
        report.add(
            .init(
                section: "server", name: "normal client answers other than 200 during the attack", value: Double(attacked.failures),
                unit: "count", budget: "= 0", passed: attacked.failures == 0 && floor.failures == 0))
        report.add(.init(section: "server", name: "attack connections closed to make room", value: Double(server.evictionCount), unit: "count"))
    }

    /// `count` requests, each on a new connection, one every 5 ms: latency percentiles in
    /// nanoseconds and how many were not answered 200.
    private static func measure(_ count: Int, port: UInt16) throws -> (p99: Double, failures: Int) {
        let request = Array("GET /flags?partner=bench HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n".utf8)
        var times: [Double] = []
        var failures = 0
        for _ in 0..<count {
            let start = DispatchTime.now().uptimeNanoseconds
            let status = KeepAliveClient(port: port)?.exchange(request)
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start))
            if status != 200 { failures += 1 }
            usleep(5_000)
        }
        times.sort()
        return (times[min(times.count - 1, Int(Double(times.count) * 0.99))], failures)
    }
}

/// `connections` sockets that each send the start of a request header and then one byte
/// every second, reconnecting as soon as the server closes them: a slowloris attack, from
/// one thread.
final class SlowHeaderAttack: Sendable {
    private let stopped = Locked(false)
    private let finished = DispatchSemaphore(value: 0)

    init(port: UInt16, connections: Int) {
        let thread = Thread { [stopped, finished] in
            var sockets = [Int32](repeating: -1, count: connections)
            var lastByte = [UInt64](repeating: 0, count: connections)
            while !stopped.withLock({ $0 }) {
                let now = DispatchTime.now().uptimeNanoseconds
                for i in sockets.indices {
                    if sockets[i] >= 0, Self.closedByServer(sockets[i]) {
                        close(sockets[i])
                        sockets[i] = -1
                    }
                    if sockets[i] < 0 {
                        sockets[i] = LoopbackSocket.connect(port: port) ?? -1
                        if sockets[i] >= 0 { Self.send(sockets[i], "GET /flags HTTP/1.1\r\nHost: x\r\nX-Slow: ") }
                        lastByte[i] = now
                    } else if now - lastByte[i] > 1_000_000_000 {
                        Self.send(sockets[i], "a")
                        lastByte[i] = now
                    }
                }
                usleep(2_000)
            }
            for fd in sockets where fd >= 0 { close(fd) }
            finished.signal()
        }
        thread.start()
    }

    func stop() {
        let first = stopped.withLock { s -> Bool in
            defer { s = true }
            return !s
        }
        if first { finished.wait() }
    }

    /// Whether the server answered (408) or closed: anything readable ends this socket.
    private static func closedByServer(_ fd: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) > 0
    }

    private static func send(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}
