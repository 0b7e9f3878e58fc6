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

/// The flag server under load from a raw keep-alive client: its resident memory must stay
/// flat however many requests it answers (its request log is a bounded ring).
enum ServerBenchmarks {
    static func run(_ report: Report, quick: Bool) throws {
        let count = quick ? 20_000 : 100_000
        report.section("FlagServer memory — \(count.formatted()) keep-alive requests on one connection")
        let server = try FlagServer(document: ServerDocument(base: FlagDocument(version: "bench", flags: sampleFlags(20))))
        defer { server.stop() }
        guard let client = KeepAliveClient(port: server.port) else { throw BenchmarkError("cannot connect to the flag server") }
        let request = Array("GET /flags?partner=bench HTTP/1.1\r\nHost: bench\r\n\r\n".utf8)
        // Warm up past the log's capacity, so the ring is full before measuring.
        for _ in 0..<5_000 { guard client.exchange(request) == 200 else { throw BenchmarkError("the server did not answer 200") } }
        guard let before = ProcessMemory.residentBytes() else {
            report.note("resident memory cannot be read on this platform")
            return
        }
        let start = DispatchTime.now().uptimeNanoseconds
        for _ in 0..<count { guard client.exchange(request) == 200 else { throw BenchmarkError("the server did not answer 200") } }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start)
        let after = ProcessMemory.residentBytes() ?? before
        let grown = Double(max(0, after - before))
        report.add(.init(section: "server", name: "requests answered on one keep-alive connection", value: Double(count), unit: "count"))
        report.add(.init(section: "server", name: "per request, round trip", value: elapsed / Double(count) / 1_000, unit: "µs"))
        report.add(
            .init(
                section: "server", name: "resident growth over those requests", value: grown, unit: "bytes",
                budget: "< 2 MB", passed: grown < 2_000_000))
        report.add(
            .init(
                section: "server", name: "requests kept in the log", value: Double(server.requests.count), unit: "count",
                budget: "= 1,000", passed: server.requests.count == 1_000 && server.requestCount == count + 5_000))
    }
}

/// A blocking HTTP/1.1 client on one socket: sends a request, reads the answer's head and
/// its Content-Length body, returns the status.
final class KeepAliveClient {
    private let fd: Int32
    private var buffer: [UInt8] = []

    init?(port: UInt16) {
        guard let fd = LoopbackSocket.connect(port: port) else { return nil }
        self.fd = fd
    }

    deinit { close(fd) }

    /// Sends `request` and reads one whole answer; nil when the connection failed.
    func exchange(_ request: [UInt8]) -> Int? {
        let sent = request.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard sent == request.count else { return nil }
        var headEnd: Int?
        while headEnd == nil {
            headEnd = find([13, 10, 13, 10])
            if headEnd == nil, !fill() { return nil }
        }
        guard let end = headEnd else { return nil }
        let head = String(decoding: buffer[0..<end], as: UTF8.self)
        let status = head.split(separator: " ").dropFirst().first.flatMap { Int($0) }
        let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
        while buffer.count < end + 4 + length {
            guard fill() else { return nil }
        }
        buffer.removeFirst(end + 4 + length)
        return status
    }

    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let n = read(fd, &chunk, chunk.count)
        guard n > 0 else { return false }
        buffer.append(contentsOf: chunk[0..<n])
        return true
    }

    private func find(_ needle: [UInt8]) -> Int? {
        guard buffer.count >= needle.count else { return nil }
        for i in 0...(buffer.count - needle.count) where buffer[i] == needle[0] && Array(buffer[i..<(i + needle.count)]) == needle {
            return i
        }
        return nil
    }
}
