public import FeatureFlags
public import Foundation

/// A ``FlagTransport`` that answers from code instead of the network: for testing an endpoint,
/// a ``FlagFetcher`` or a provider without a socket server. It records every request, honours
/// the size limit the fetcher passes (``FetchError/payloadTooLarge(limit:)``) and refuses
/// requests after ``shutdown()``, as a real transport must.
///
/// ```swift
/// let transport = StubTransport.serving(body: Array(#"{"flags":{"new_checkout":true}}"#.utf8), etag: "\"v1\"")
/// let fetcher = FlagFetcher(endpoint: .json(post: url), configuration: .init(budget: .seconds(30)), transport: transport)
/// ```
///
/// The stub answers at once, but the fetch still runs on Swift's tasks, under the fetcher's
/// budget: give tests a generous one (as above), not the default 2 s, so that a machine loaded
/// by a parallel test run (or ThreadSanitizer) cannot turn an answer into a timeout.
public final class StubTransport: FlagTransport {
    private let answer: @Sendable (FlagRequest) throws(FetchError) -> FlagResponse
    private let state = Locked<(requests: [FlagRequest], closed: Bool)>(([], false))

    /// A transport that answers each request with what `answer` returns or throws.
    public init(_ answer: @escaping @Sendable (FlagRequest) throws(FetchError) -> FlagResponse) {
        self.answer = answer
    }

    /// A transport that gives `responses` in order, then the last one again for every later
    /// request (a single response answers every request).
    public convenience init(responses: [FlagResponse]) {
        let queue = Locked(responses)
        self.init { _ throws(FetchError) in
            let next = queue.withLock { q -> FlagResponse? in q.count > 1 ? q.removeFirst() : q.first }
            guard let next else { throw .transport("StubTransport has no response to give") }
            return next
        }
    }

    /// A service holding one document: `200` with `body` and `etag`, or `304` when the request
    /// carries `If-None-Match` with that tag.
    public static func serving(body: [UInt8], etag: String? = nil, headers: [String: String] = [:]) -> StubTransport {
        StubTransport { request in
            var fields = headers
            if let etag {
                fields["ETag"] = etag
                let sent = request.headers.first { $0.key.lowercased() == "if-none-match" }?.value
                if sent == etag { return FlagResponse(status: 304, headers: fields) }
            }
            return FlagResponse(status: 200, headers: fields, body: body)
        }
    }

    /// Every request sent so far, oldest first.
    public var requests: [FlagRequest] { state.withLock { $0.requests } }

    /// Records `request` and answers it; ``FetchError/cancelled`` after ``shutdown()``.
    public func send(_ request: FlagRequest, maxBytes: Int, timeout: TimeInterval) async throws(FetchError) -> FlagResponse {
        let closed = state.withLock { s -> Bool in
            if !s.closed { s.requests.append(request) }
            return s.closed
        }
        if closed || Task.isCancelled { throw .cancelled }
        let response = try answer(request)
        if response.body.count > maxBytes { throw .payloadTooLarge(limit: maxBytes) }
        return response
    }

    /// Refuses every later request. Idempotent.
    public func shutdown() { state.withLock { $0.closed = true } }
}
