import Foundation
import Testing
@testable import FeatureFlags
import FlagServer

/// A ``FlagEndpoint`` wrapper that counts decodes, to prove a 304 costs none.
final class CountingEndpoint: FlagEndpoint, Sendable {
    let inner: any FlagEndpoint
    private let decodes = Locked(0)
    init(_ inner: any FlagEndpoint) { self.inner = inner }
    var name: String { inner.name }
    var decodeCount: Int { decodes.withLock { $0 } }
    func request(for context: EvaluationContext, etag: String?) throws(FlagEndpointError) -> FlagRequest {
        try inner.request(for: context, etag: etag)
    }
    func decode(_ response: FlagResponse, for context: EvaluationContext, fetchedAt: Date) throws(FlagEndpointError) -> FlagFetchResult {
        decodes.withLock { $0 += 1 }
        return try inner.decode(response, for: context, fetchedAt: fetchedAt)
    }
    func failureDetail(_ response: FlagResponse) -> String? { inner.failureDetail(response) }
}

let auraPersonal = EvaluationContext(targetingKey: "user-1", venue: "venue-7", partner: "auralink", planTier: "personal")
let auraBusiness = EvaluationContext(targetingKey: "user-1", venue: "venue-7", partner: "auralink", planTier: "business")

/// A server on the seeds' document and a POST client for it.
func makeServerAndClient(
    deadline: Duration = .seconds(2), maxBytes: Int = 1 << 20, headers: [String: String] = [:]
) throws -> (FlagServer, OnlineClient, CountingEndpoint) {
    let server = try FlagServer(document: .seedExample)
    let endpoint = CountingEndpoint(JSONFlagEndpoint(post: server.flagsURL))
    let client = OnlineClient(
        endpoint: endpoint,
        configuration: .init(deadline: deadline, maxResponseBytes: maxBytes, headers: headers))
    return (server, client, endpoint)
}

/// The snapshot of a result, or a recorded issue.
func snapshot(of result: FlagFetchResult, sourceLocation: SourceLocation = #_sourceLocation) -> FlagSnapshot? {
    guard case .snapshot(let snapshot) = result else {
        Issue.record("expected a snapshot, got \(result)", sourceLocation: sourceLocation)
        return nil
    }
    return snapshot
}

/// The error a fetch threw, or a recorded issue if it succeeded.
func fetchError(_ client: OnlineClient, _ context: EvaluationContext, sourceLocation: SourceLocation = #_sourceLocation) async -> FetchError? {
    do {
        let result = try await client.fetch(for: context)
        Issue.record("expected an error, got \(result)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}
