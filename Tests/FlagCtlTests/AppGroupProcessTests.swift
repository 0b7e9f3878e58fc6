import ChildProcesses
import FeatureFlags
@testable import FlagCtlCore
import FlagServer
import Foundation
import Testing
import TestSupport

/// The App Group recipe with two processes: the app's provider stores its fallback file in a
/// shared directory (the group container); an extension — here `flagctl read`, a separate
/// process — reads it through the offline client, with no network of its own.
@Suite("App Group: an extension process reads the app's store")
struct AppGroupProcessTests {
    struct Read {
        let status: Int32
        let header: [String: FlagValue]
        let flags: [String: FlagValue]
        let err: String
    }

    static func read(_ binary: URL, _ container: TempDir) async throws -> Read {
        let ended = try await ChildProcess.run(
            binary, ["read", "--state", container.path, "--json"], timeout: TestTiming.scaled(.seconds(30)))
        let lines = ended.jsonLines
        var flags: [String: FlagValue] = [:]
        for line in lines.dropFirst() { if let name = line["flag"]?.stringValue { flags[name] = line["value"] ?? .null } }
        return Read(status: ended.status, header: lines.first ?? [:], flags: flags, err: ended.errorText)
    }

    static func document(killed: Bool, version: String) -> ServerDocument {
        var document = ServerDocument.seedExample
        document.base.flags["kill_switch"] = FlagEntry(value: .bool(killed))
        document.base.version = version
        return document
    }

    /// The app's side: a provider whose store lives in the container.
    /// (Without change streams: the request counts below are the app's fetches alone.)
    static func app(_ server: FlagServer, _ container: TempDir) -> FeatureFlagProvider {
        var configuration = FeatureFlagProvider.Configuration()
        configuration.changeStreams = false
        return FeatureFlagProvider(
            context: EvaluationContext(targetingKey: "user-1", venue: "venue-42"),
            fetcher: FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: .init(budget: TestTiming.loopbackBudget)),
            store: LastKnownGoodStore(fileURL: container.url("flags.lkg")), configuration: configuration, reachability: AlwaysReachable(),
            lifecycle: AlwaysForeground())
    }

    @Test(.disabled(if: TestTiming.underThreadSanitizer, .sanitizedChildren))
    func theExtensionSeesWhatTheAppStoredAndTheKill() async throws {
        let binary = try #require(builtProduct("flagctl"), "flagctl was not built next to the tests")
        let server = try FlagServer(document: Self.document(killed: false, version: "v1"))
        defer { server.stop() }
        let container = TempDir()
        // Before the app ever ran: nothing to read, said plainly.
        let empty = try await Self.read(binary, container)
        #expect(empty.status == 66 && empty.err.contains("no fallback file"), "\(empty.err)")

        let app = Self.app(server, container)
        defer { app.shutdown() }
        #expect(await app.refreshInBackground(deadline: TestTiming.loopbackBudget).isSuccess)
        let first = try await Self.read(binary, container)
        #expect(first.status == 0, "\(first.err)")
        #expect(first.flags["new_checkout"] == .bool(app.value(FlagKey("new_checkout", default: false))))
        #expect(first.flags["plan_themeColor"] != nil && first.header["kill_switch"] == false)
        #expect(server.requestCount == 1, "the extension made no request")

        server.document = Self.document(killed: true, version: "v2")
        #expect(await app.refreshInBackground(deadline: TestTiming.loopbackBudget).isSuccess)
        let killed = try await Self.read(binary, container)
        #expect(killed.header["kill_switch"] == true, "\(killed.header)")
        #expect(server.requestCount == 2)
    }

    @Test(.disabled(if: TestTiming.underThreadSanitizer, .sanitizedChildren))
    func readsWhileTheAppWritesAlwaysFindAWholeSnapshot() async throws {
        let binary = try #require(builtProduct("flagctl"), "flagctl was not built next to the tests")
        let server = try FlagServer(document: Self.document(killed: false, version: "w0"))
        defer { server.stop() }
        let container = TempDir()
        let app = Self.app(server, container)
        defer { app.shutdown() }
        #expect(await app.refresh().isSuccess)
        let expected = try await Self.read(binary, container).flags.count
        let writer = Task {
            for round in 1...40 {
                server.document = Self.document(killed: round % 2 == 1, version: "w\(round)")
                _ = await app.refresh()
            }
        }
        var reads = 0
        while !writer.isCancelled, reads < 12 {
            let read = try await Self.read(binary, container)
            #expect(read.status == 0 && read.flags.count == expected, "read \(reads): \(read.err)")
            reads += 1
        }
        await writer.value
        #expect(expected > 0)
    }

    @Test func readUsageErrorsAndADamagedFile() async throws {
        let (console, captured) = Console.capturing()
        #expect(await FlagCtl.run(["read"], console: console) == 64)
        #expect(captured.err.first?.contains("--state DIR is required") == true)
        let container = TempDir()
        try Data("not a fallback file".utf8).write(to: container.url("flags.lkg"))
        let (damagedConsole, damaged) = Console.capturing()
        let status = await FlagCtl.run(["read", "--state", container.path], console: damagedConsole)
        #expect(status == 66, "a file that cannot be used is said, not shown as an empty set")
        #expect(!damaged.err.isEmpty, "\(damaged.out)")
    }
}
