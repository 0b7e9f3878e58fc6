import FeatureFlags
import FlagServer
import Foundation

/// Answers far above the 1 MiB response cap, one after another — declared with a
/// Content-Length, chunked, and delimited by closing the connection — against providers in a
/// child process of this one (``OversizedProbe``, with two malloc arenas): its resident memory
/// after each transfer has ended must stay within a bound, and must not rise with the count.
/// The test `aHundredHugeBodiesKeepTheProcessBounded` checks the same.
enum OversizedBenchmarks {
    static func run(_ report: Report, quick: Bool) throws {
        let count = quick ? 30 : 99
        let size = 50_000_000
        report.section("Oversized answers — \(count) in a row, \(size / 1_000_000) MB each (three framings), against the 1 MiB cap")
        let faults: [FlagServer.Fault] = [
            .oversizedBody(bytes: size), .oversizedChunkedBody(bytes: size), .oversizedCloseDelimitedBody(bytes: size),
        ]
        let servers = try faults.map { fault -> FlagServer in
            let server = try FlagServer(document: ServerDocument(base: FlagDocument(version: "bench", flags: sampleFlags(10))))
            server.fault = fault
            return server
        }
        defer { for server in servers { server.stop() } }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        process.arguments = ["--oversized-child", servers.map(\.flagsURL.absoluteString).joined(separator: ","), "\(count)"]
        process.environment = OversizedProbe.childEnvironment
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let growth = OversizedProbe.growth(in: output)
        guard process.terminationStatus == 0, growth.count == count else {
            report.note("the oversized child failed: \(output.suffix(200))")
            return
        }
        let refused = output.hasSuffix("refused \(count)\n")
        let (peak, rise, tailSlope) = OversizedProbe.summary(growth)
        let mib = 1 << 20
        report.add(.init(section: "oversized", name: "answers refused as too large", value: refused ? Double(count) : 0, unit: "of \(count)",
                         budget: "= \(count)", passed: refused))
        report.add(.init(section: "oversized", name: "peak resident growth over \(count) oversized answers", value: Double(peak), unit: "bytes",
                         budget: "≤ 16 MiB", passed: peak <= 16 * mib))
        report.add(.init(section: "oversized", name: "mean growth, second half above the first", value: Double(max(0, rise)), unit: "bytes",
                         budget: "≤ 2 MiB, or flat at the end", passed: !OversizedProbe.leaks(rise: rise, tailSlope: tailSlope)))
        report.add(.init(section: "oversized", name: "growth per answer over the last third", value: Double(tailSlope), unit: "bytes"))
    }

    /// In a child process: the probe, its lines on standard output.
    static func child(urls: String, count: Int) async {
        let list = urls.split(separator: ",").compactMap { URL(string: String($0)) }
        let ok = await OversizedProbe.run(urls: list, count: count) { print($0) }
        exit(ok ? 0 : 1)
    }
}
