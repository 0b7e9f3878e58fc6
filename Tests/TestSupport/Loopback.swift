import Foundation
package import Testing
package import FeatureFlags
package import FlagServer

/// A ``FlagEndpoint`` wrapper that counts decodes, to prove a 304 costs none.
package final class CountingEndpoint: EndpointFormat, Sendable {
    package let inner: FlagEndpoint
    private let decodes = Locked(0)
    package init(_ inner: FlagEndpoint) { self.inner = inner }
    package var name: String { inner.name }
    package var decodeCount: Int { decodes.withLock { $0 } }
    package func request(for context: EvaluationContext, etag: String?) throws(FlagError) -> FlagRequest {
        try inner.request(for: context, etag: etag)
    }
    package func decode(_ response: FlagResponse, for context: EvaluationContext) throws(FlagError) -> DecodedFlags {
        decodes.withLock { $0 += 1 }
        return try inner.decode(response, for: context)
    }
    package func failureDetail(_ response: FlagResponse) -> String? { inner.failureDetail(response) }
}

/// A server on the demo document and a POST fetcher for it.
package func makeServerAndFetcher(
    budget: Duration = TestTiming.loopbackBudget, maxBytes: Int = 1 << 20, headers: [String: String] = [:]
) throws -> (FlagServer, FlagFetcher, CountingEndpoint) {
    let server = try FlagServer(document: .seedExample)
    let endpoint = CountingEndpoint(FlagEndpoint.json(post: server.flagsURL))
    let fetcher = FlagFetcher(
        endpoint: endpoint, configuration: .init(budget: budget, maxResponseBytes: maxBytes, headers: headers))
    return (server, fetcher, endpoint)
}

/// The snapshot and tag of a result, or a recorded issue.
package func fetched(_ result: FetchResult, sourceLocation: SourceLocation = #_sourceLocation) -> (snapshot: FlagSnapshot, etag: EntityTag?)? {
    guard case .fetched(let snapshot, let etag, _) = result else {
        Issue.record("expected new flags, got \(result)", sourceLocation: sourceLocation)
        return nil
    }
    return (snapshot, etag)
}

/// The snapshot of a result, or a recorded issue.
package func snapshot(of result: FetchResult, sourceLocation: SourceLocation = #_sourceLocation) -> FlagSnapshot? {
    fetched(result, sourceLocation: sourceLocation)?.snapshot
}

/// The error a fetch failed with, or a recorded issue if it did not fail.
package func fetchError(
    _ fetcher: FlagFetcher, _ context: EvaluationContext, ifNoneMatch: EntityTag? = nil,
    sourceLocation: SourceLocation = #_sourceLocation
) async -> FetchError? {
    let result = await fetcher.fetch(context, ifNoneMatch: ifNoneMatch)
    guard case .failed(let error) = result else {
        Issue.record("expected an error, got \(result)", sourceLocation: sourceLocation)
        return nil
    }
    return error
}

extension FlagFetcher.Configuration {
    /// The default configuration with a budget of ``TestTiming/loopbackBudget``: for tests
    /// that fetch over loopback in real time and are not about time.
    package static var loopback: Self { .init(budget: TestTiming.loopbackBudget) }
}
