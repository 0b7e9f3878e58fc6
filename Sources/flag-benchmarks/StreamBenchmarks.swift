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

/// One document change fanned out by FlagServer to 500 open change streams: the time from
/// the change until the last stream has its event, over repeated flips.
enum StreamBenchmarks {
    static func run(_ report: Report, quick: Bool) throws {
        let streams = 500
        let flips = quick ? 5 : 20
        report.section("FlagServer change streams — one change fanned out to \(streams) open streams, \(flips) times")
        raiseDescriptorLimit(to: 4 * streams + 256)
        let server = try FlagServer(
            document: ServerDocument(base: FlagDocument(version: "0", flags: sampleFlags(20))),
            configuration: .init(maxStreams: streams + 12, streamHeartbeat: .seconds(60)))
        defer { server.stop() }
        var sockets: [Int32] = []
        defer { for fd in sockets { close(fd) } }
        let request = Array("GET /events HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n".utf8)
        // Opened 16 at a time, each batch once the previous ones are streams: a stream holds one
        // of the server's connection places only until its request is read, and 500 at once
        // would find the places (32) taken. (Reconnection storms are spread by clients' jitter.)
        let opened = Date().addingTimeInterval(30)
        while sockets.count < streams, Date() < opened {
            for _ in 0..<min(16, streams - sockets.count) {
                guard let fd = LoopbackSocket.connect(port: server.port) else { throw BenchmarkError("cannot open stream \(sockets.count + 1)") }
                sockets.append(fd)
                _ = request.withUnsafeBytes { LoopbackSocket.send(fd, $0) }
            }
            while server.streamCount < sockets.count, Date() < opened { usleep(1_000) }
        }
        guard server.streamCount == streams else { throw BenchmarkError("only \(server.streamCount) of \(streams) streams opened") }
        drain(sockets, for: .milliseconds(200))
        var lastArrivals: [Double] = []
        for flip in 1...flips {
            let start = DispatchTime.now().uptimeNanoseconds
            server.document = ServerDocument(base: FlagDocument(version: "\(flip)", flags: sampleFlags(20)))
            guard let last = waitForEvent(on: sockets, id: flip, timeout: .seconds(10)) else {
                throw BenchmarkError("flip \(flip) did not reach every stream within 10 s")
            }
            lastArrivals.append(Double(last - start))
        }
        lastArrivals.sort()
        let p50 = lastArrivals[lastArrivals.count / 2]
        let worst = lastArrivals[lastArrivals.count - 1]
        report.add(.init(section: "streams", name: "change to the last of \(streams) streams, median", value: p50 / 1e6, unit: "ms"))
        report.add(
            .init(
                section: "streams", name: "change to the last of \(streams) streams, worst of \(flips)", value: worst / 1e6, unit: "ms",
                budget: "≤ 1 s", passed: worst <= 1e9))
    }

    /// Reads until every socket has received `id: <id>`; returns when the last one did.
    private static func waitForEvent(on sockets: [Int32], id: Int, timeout: Duration) -> UInt64? {
        let marker = Array("id: \(id)\n".utf8)
        var pending = Set(sockets.indices)
        var tails = [[UInt8]](repeating: [], count: sockets.count)
        var fds = sockets.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(timeout.components.seconds) * 1_000_000_000
        var last: UInt64 = 0
        var chunk = [UInt8](repeating: 0, count: 4_096)
        while !pending.isEmpty, DispatchTime.now().uptimeNanoseconds < deadline {
            guard poll(&fds, nfds_t(fds.count), 100) > 0 else { continue }
            for i in fds.indices where fds[i].revents != 0 {
                fds[i].revents = 0
                let n = recv(fds[i].fd, &chunk, chunk.count, Int32(MSG_DONTWAIT))
                guard n > 0 else { continue }
                tails[i] += chunk[0..<n]
                if pending.contains(i), contains(tails[i], marker) {
                    pending.remove(i)
                    last = DispatchTime.now().uptimeNanoseconds
                    tails[i].removeAll()
                }
                if tails[i].count > 64 { tails[i].removeFirst(tails[i].count - 64) }
            }
        }
        return pending.isEmpty ? last : nil
    }

    /// Reads and drops what the sockets have (the answer heads and opening comments).
    private static func drain(_ sockets: [Int32], for duration: Duration) {
        var chunk = [UInt8](repeating: 0, count: 4_096)
        let end = DispatchTime.now().uptimeNanoseconds + UInt64(duration.components.attoseconds / 1_000_000_000)
            + UInt64(duration.components.seconds) * 1_000_000_000
        while DispatchTime.now().uptimeNanoseconds < end {
            for fd in sockets { while recv(fd, &chunk, chunk.count, Int32(MSG_DONTWAIT)) > 0 {} }
            usleep(10_000)
        }
    }

    private static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard haystack.count >= needle.count else { return false }
        for start in 0...(haystack.count - needle.count) where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return true
        }
        return false
    }
}

/// Lets this process open `count` descriptors, within the hard limit.
func raiseDescriptorLimit(to count: Int) {
    var limit = rlimit()
    #if canImport(Glibc)
    let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    let resource = RLIMIT_NOFILE
    #endif
    guard getrlimit(resource, &limit) == 0, limit.rlim_cur < rlim_t(count) else { return }
    limit.rlim_cur = min(rlim_t(count), limit.rlim_max)
    _ = setrlimit(resource, &limit)
}
