import ChildProcesses
import FeatureFlags
import FlagServer
import Foundation

/// Answers far above the 1 MiB response cap, one after another — declared with a
/// Content-Length, chunked, and delimited by closing the connection — fetched in ordinary child
/// processes of this one (no allocator settings): by providers (``OversizedProbe``), and, as the
/// control, by a plain `URLSession` that cancels each task at the cap (``PlainTransferProbe``).
/// The providers' process is read twice: as an app's process shows it, and with free memory
/// returned to the system before each reading (what it holds live). The control shows the
/// platform's share: the bytes its tasks deliver after the cancel, and what its process keeps.
enum OversizedBenchmarks {
    static func run(_ report: Report, quick: Bool) throws {
        let count = quick ? 30 : 99
        let size = 50_000_000
        report.section("Oversized answers — \(count) in a row, \(size / 1_000_000) MB each (three framings), against the 1 MiB cap")
        let faults: [FlagServer.Fault] = [
            .oversizedBody(bytes: size), .oversizedChunkedBody(bytes: size), .oversizedCloseDelimitedBody(bytes: size),
        ]
        let labels = ["Content-Length", "chunked", "close-delimited"]
        let servers = try faults.map { fault -> FlagServer in
            let server = try FlagServer(document: ServerDocument(base: FlagDocument(version: "bench", flags: sampleFlags(10))))
            server.fault = fault
            return server
        }
        defer { for server in servers { server.stop() } }
        let mib = 1 << 20
        /// One child through `count` answers: its output and growth, or nil (noted) when it failed.
        func child(_ mode: String, trim: Bool, answers: Int = count) throws -> (output: String, growth: [Int])? {
            let process = try ChildProcess(
                URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath(),
                [mode, servers.map(\.flagsURL.absoluteString).joined(separator: ","), "\(answers)", trim ? "trim" : "as-is"], errors: .discard)
            let output = String(decoding: process.output!.readDataToEndOfFile(), as: UTF8.self)
            let ended = process.waitUntilExit()
            let growth = OversizedProbe.growth(in: output)
            guard ended.succeeded, growth.count == answers else {
                report.add(.init(section: "oversized", name: "answers the \(mode) child went through", value: Double(growth.count),
                                 unit: "of \(answers)", budget: "= \(answers)", passed: false))
                report.note("the oversized child (\(mode)) failed: \(output.suffix(200))")
                return nil
            }
            return (output, growth)
        }
        /// The bytes each server wrote per answer since `marks` (its request counts then), as a note.
        func noteBytesWritten(since marks: [Int], by who: String) {
            for (server, (label, mark)) in zip(servers, zip(labels, marks)) {
                let sent = server.requests.dropFirst(mark + 1).map(\.bytesSent).sorted()
                guard !sent.isEmpty else { continue }
                report.note("\(label), \(who): the server wrote a median \(sent[sent.count / 2] / 1_000_000) MB (most \(sent.last! / 1_000_000) MB) per refused answer before the client closed")
            }
        }

        // The library, what it holds live: budgeted.
        guard let live = try child("--oversized-child", trim: true) else { return }
        let (livePeak, liveRise, liveTail) = OversizedProbe.summary(live.growth)
        let refused = live.output.hasSuffix("refused \(count)\n")
        report.add(.init(section: "oversized", name: "answers refused as too large", value: refused ? Double(count) : 0, unit: "of \(count)",
                         budget: "= \(count)", passed: refused))
        report.add(.init(section: "oversized", name: "live: peak growth over \(count) answers (free memory returned)", value: Double(livePeak), unit: "bytes",
                         budget: "≤ 16 MiB", passed: livePeak <= 16 * mib))
        // A run that looks like a leak is judged by a child through twice as many answers, as the test
        // does: the allocator's steps of 1–2 MB can land late in 99 answers; a leak grows with the count.
        var grows = false
        if OversizedProbe.leaks(rise: liveRise, tailSlope: liveTail) {
            guard let doubled = try child("--oversized-child", trim: true, answers: 2 * count) else { return }
            let again = OversizedProbe.summary(doubled.growth)
            grows = OversizedProbe.scales(first: (liveRise, liveTail), doubled: (again.rise, again.tailSlope))
            report.note("live: the halves lay \(liveRise / 1024) KB apart, still rising at the end; through \(2 * count) answers \(again.rise / 1024) KB")
        }
        report.add(.init(section: "oversized", name: "live: second half's mean above the first's", value: Double(max(0, liveRise)), unit: "bytes",
                         budget: "≤ 2 MiB, flat at the end, or not growing with the count", passed: !grows))
        report.add(.init(section: "oversized", name: "live: growth per answer over the last third", value: Double(liveTail), unit: "bytes"))

        // The library as an app's process runs it: the peak budgeted.
        let marks = servers.map(\.requestCount)
        guard let asIs = try child("--oversized-child", trim: false) else { return }
        let (peak, rise, tail) = OversizedProbe.summary(asIs.growth)
        report.add(.init(section: "oversized", name: "as it runs: peak resident growth over \(count) answers", value: Double(peak), unit: "bytes",
                         budget: "≤ 16 MiB", passed: peak <= 16 * mib))
        report.add(.init(section: "oversized", name: "as it runs: second half's mean above the first's", value: Double(max(0, rise)), unit: "bytes"))
        report.add(.init(section: "oversized", name: "as it runs: growth per answer over the last third", value: Double(tail), unit: "bytes"))
        noteBytesWritten(since: marks, by: "the library")

        // The control: a plain URLSession, first with free memory returned after each transfer (as
        // the library's transport does after a refused one), then as an app would leave it.
        let plainMarks = servers.map(\.requestCount)
        guard let plain = try child("--plain-child", trim: true) else { return }
        let (plainPeak, plainRise, plainTail) = OversizedProbe.summary(plain.growth)
        report.add(.init(section: "oversized", name: "plain URLSession, free memory returned: peak growth", value: Double(plainPeak), unit: "bytes"))
        report.add(.init(section: "oversized", name: "plain URLSession, free memory returned: second half above the first", value: Double(max(0, plainRise)), unit: "bytes"))
        report.add(.init(section: "oversized", name: "plain URLSession, free memory returned: growth per answer, last third", value: Double(plainTail), unit: "bytes"))
        report.add(.init(section: "oversized", name: "the library's share: its growth per answer, last third, above the plain client's", value: Double(tail - plainTail), unit: "bytes"))
        let received = PlainTransferProbe.received(in: plain.output)
        for (index, label) in labels.enumerated() {
            let mine = received.enumerated().filter { $0.offset % labels.count == index }.map(\.element).sorted()
            guard !mine.isEmpty else { continue }
            report.add(.init(section: "oversized", name: "plain URLSession, \(label): bytes its task delivered (median; cancelled past 1 MiB)",
                             value: Double(mine[mine.count / 2]), unit: "bytes"))
            report.add(.init(section: "oversized", name: "plain URLSession, \(label): most bytes one task delivered", value: Double(mine.last!), unit: "bytes"))
        }
        noteBytesWritten(since: plainMarks, by: "plain URLSession")
        guard let bare = try child("--plain-child", trim: false) else { return }
        report.add(.init(section: "oversized", name: "plain URLSession as an app leaves it: peak resident growth", value: Double(OversizedProbe.summary(bare.growth).peak), unit: "bytes"))
    }

    /// In a child process: the library's probe, or with `plain` the control's, its lines on standard output.
    static func child(urls: String, count: Int, returningFreeMemory: Bool, plain: Bool = false) async {
        let list = urls.split(separator: ",").compactMap { URL(string: String($0)) }
        let ok = plain
            ? await PlainTransferProbe.run(urls: list, count: count, returningFreeMemory: returningFreeMemory) { print($0) }
            : await OversizedProbe.run(urls: list, count: count, returningFreeMemory: returningFreeMemory) { print($0) }
        exit(ok ? 0 : 1)
    }
}
