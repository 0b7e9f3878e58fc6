import FeatureFlags
import FlagServer
import Foundation

/// Answers far above the 1 MiB response cap, one after another — declared with a
/// Content-Length, chunked, and delimited by closing the connection — against providers in an
/// ordinary child process of this one (``OversizedProbe``; no allocator settings). Two runs: one
/// reads resident memory as an app's process shows it; one returns free memory to the system
/// before each reading, leaving what the process holds live (the test
/// `aHundredHugeBodiesKeepTheProcessBounded` checks that one), which must stay within a bound and
/// must not rise with the count; the other is shown. The bytes the servers wrote per refused answer show how far the platform's
/// URLSession reads a transfer on after it was cancelled.
enum OversizedBenchmarks {
    static func run(_ report: Report, quick: Bool) throws {
        let count = quick ? 30 : 99
        let size = 50_000_000
        report.section("Oversized answers — \(count) in a row, \(size / 1_000_000) MB each (three framings), against the 1 MiB cap")
        let faults: [FlagServer.Fault] = [
            .oversizedBody(bytes: size), .oversizedChunkedBody(bytes: size), .oversizedCloseDelimitedBody(bytes: size),
        ]
        let mib = 1 << 20
        for trim in [true, false] {
            let servers = try faults.map { fault -> FlagServer in
                let server = try FlagServer(document: ServerDocument(base: FlagDocument(version: "bench", flags: sampleFlags(10))))
                server.fault = fault
                return server
            }
            defer { for server in servers { server.stop() } }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            process.arguments = ["--oversized-child", servers.map(\.flagsURL.absoluteString).joined(separator: ","), "\(count)", trim ? "trim" : "as-is"]
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
            let (peak, rise, tailSlope) = OversizedProbe.summary(growth)
            if trim {
                let refused = output.hasSuffix("refused \(count)\n")
                report.add(.init(section: "oversized", name: "answers refused as too large", value: refused ? Double(count) : 0, unit: "of \(count)",
                                 budget: "= \(count)", passed: refused))
                report.add(.init(section: "oversized", name: "live: peak growth over \(count) answers (free memory returned)", value: Double(peak), unit: "bytes",
                                 budget: "≤ 16 MiB", passed: peak <= 16 * mib))
                report.add(.init(section: "oversized", name: "live: second half's mean above the first's", value: Double(max(0, rise)), unit: "bytes",
                                 budget: "≤ 2 MiB, or flat at the end", passed: !OversizedProbe.leaks(rise: rise, tailSlope: tailSlope)))
                report.add(.init(section: "oversized", name: "live: growth per answer over the last third", value: Double(tailSlope), unit: "bytes"))
            } else {
                // Shown, not budgeted: what glibc keeps of the bytes libcurl read after the cancel
                // varies with the machine's load; the live figure above is the library's share.
                report.add(.init(section: "oversized", name: "as it runs: peak resident growth over \(count) answers", value: Double(peak), unit: "bytes"))
                report.add(.init(section: "oversized", name: "as it runs: second half's mean above the first's", value: Double(max(0, rise)), unit: "bytes"))
                report.add(.init(section: "oversized", name: "as it runs: growth per answer over the last third", value: Double(tailSlope), unit: "bytes"))
                for (server, label) in zip(servers, ["Content-Length", "chunked", "close-delimited"]) {
                    let sent = server.requests.dropFirst().map(\.bytesSent).sorted()
                    guard !sent.isEmpty else { continue }
                    report.note("\(label): the server wrote a median \(sent[sent.count / 2] / 1_000_000) MB (most \(sent.last! / 1_000_000) MB) per refused answer before the client closed")
                }
            }
        }
    }

    /// In a child process: the probe, its lines on standard output.
    static func child(urls: String, count: Int, returningFreeMemory: Bool) async {
        let list = urls.split(separator: ",").compactMap { URL(string: String($0)) }
        let ok = await OversizedProbe.run(urls: list, count: count, returningFreeMemory: returningFreeMemory) { print($0) }
        exit(ok ? 0 : 1)
    }
}
