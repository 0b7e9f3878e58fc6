import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting
import FlagServer

/// Secrets (credentials, context attribute values) never reach events, errors, details or
/// descriptions, whatever fails.
@Suite("Security")
struct SecurityTests {
    static let token = "Bearer sk_live_TOPSECRET_9f8e7d"
    static let secretValues = ["alice.private@example.com", "venue-secret-4242", "partner-hidden-x1"]
    let context = EvaluationContext(
        targetingKey: "alice.private@example.com", venue: "venue-secret-4242", partner: "partner-hidden-x1")

    private func expectClean(_ texts: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        for text in texts {
            #expect(!text.contains("TOPSECRET"), "\(text)", sourceLocation: sourceLocation)
            for secret in Self.secretValues {
                #expect(!text.contains(secret), "\(text)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func noSecretInEventsErrorsOrDetailsWhateverFails() async throws {
        let dir = TempDir()
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let clock = TestClock()
        let online = FlagFetcher(
            endpoint: .json(post: server.flagsURL),
            configuration: .init(budget: .seconds(2), headers: ["Authorization": Self.token]), clock: clock)
        // A directory where the fallback file should be: every write fails, with an event.
        try FileManager.default.createDirectory(at: dir.url("flags.lkg"), withIntermediateDirectories: true)
        let provider = FeatureFlagProvider(
            context: context, fetcher: online, store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")),
            reachability: ManualReachability(true), clock: clock)
        defer { provider.shutdown() }
        var texts: [String] = []
        func collect() {
            texts += provider.recentEvents.flatMap { [String(describing: $0), String(reflecting: $0)] }
            texts += [provider.lastError.map { "\($0)" } ?? "", provider.context.description, "\(provider.context)"]
            let d = provider.details(FlagKey("plan_themeColor", default: ""))
            texts += [d.errorMessage ?? "", String(describing: d)]
        }
        _ = await provider.refresh()  // 200, then a failed write
        collect()
        for fault: FlagServer.Fault in [.status(500, retryAfter: nil), .garbageBody, .closeConnection, .status(401, retryAfter: nil)] {
            server.fault = fault
            _ = await provider.refresh()
            collect()
        }
        #expect(server.requests.first?.headers["authorization"] == Self.token, "the header is sent")
        #expect(texts.contains { $0.contains("fallback_write_failed") })
        expectClean(texts)
        // The request log keeps only the fingerprint of the context.
        expectClean(server.requests.map { ($0.contextFingerprint ?? "") + $0.path })
    }

    @Test func insecureURLErrorsNameTheHostOnly() async {
        let client = FlagFetcher(
            endpoint: .json(post: URL(string: "http://flags.example.com/v1/flags?key=TOPSECRET")!),
            configuration: .init(headers: ["Authorization": Self.token]))
        defer { client.shutdown() }
        let error = await fetchError(client, context)
        expectClean([error?.description ?? "", String(reflecting: error)])
        #expect(error == .insecureURL(host: "flags.example.com"))
    }

    @Test func templateErrorsNameTheAttributeNotItsValue() {
        let endpoint = FlagEndpoint.json(urlTemplate: "https://cdn.example.com/{region}/{venue}.json")
        do {
            _ = try endpoint.request(for: context, etag: nil)
        } catch {
            #expect(error.message.contains("region"))
            expectClean([error.description])
        }
    }

    @Test func fingerprintsAndStoredFilesRevealNoAttributeValue() throws {
        let dir = TempDir()
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        try store.save(FlagSnapshot(values: ["a": 1]), etag: EntityTag("\"t\"", endpoint: "0/json"), for: context)
        let file = String(decoding: try FileIO.read(dir.url("flags.lkg").path), as: UTF8.self)
        expectClean([context.fingerprint, file])
        #expect(FileIO.permissions(dir.url("flags.lkg").path) == 0o600)
        #expect(FileIO.permissions(dir.url("flags.lkg.lock").path) == 0o600)
    }
}
