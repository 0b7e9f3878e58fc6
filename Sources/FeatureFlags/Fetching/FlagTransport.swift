public import Foundation

/// Sends one HTTP request and returns the whole response. It must return promptly when cancelled,
/// stop reading past `maxBytes` (throwing ``FetchError/payloadTooLarge(limit:)``) and not cache.
public protocol FlagTransport: Sendable {
    /// Sends `request`; `timeout` is a backstop only (whole seconds on Linux).
    func send(_ request: FlagRequest, maxBytes: Int, timeout: TimeInterval) async throws(FetchError) -> FlagResponse
    /// Cancels everything in flight and refuses new requests. Idempotent.
    func shutdown()
}
