public import FeatureFlags
public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// The networking module: builds orders API requests. It knows nothing about where flags
/// come from — it receives the one protocol.
public struct OrderRequestBuilder: Sendable {
    private let baseURL: URL
    private let flags: any FeatureFlagClient

    /// A builder for `baseURL`, reading its API version and timeout from `flags`.
    public init(baseURL: URL, flags: any FeatureFlagClient) {
        self.baseURL = baseURL
        self.flags = flags
    }

    /// The request that submits order `id`: `POST /v{version}/orders/{id}`.
    public func submitOrder(id: String) -> URLRequest {
        let version = max(1, flags.value(POSFlags.ordersAPIVersion))
        var request = URLRequest(url: baseURL.appendingPathComponent("v\(version)/orders/\(id)"))
        request.httpMethod = "POST"
        request.timeoutInterval = min(max(flags.value(POSFlags.requestTimeout), 1), 60)
        return request
    }
}
