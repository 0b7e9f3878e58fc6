public import Foundation

/// Sends one HTTP request and returns the whole response. ``FlagFetcher`` enforces the
/// deadline around it; a transport must return promptly when its task is cancelled, must
/// stop reading once the body exceeds `maxBytes` (throwing ``FetchError/payloadTooLarge(limit:)``),
/// and must not cache.
///
/// A `URLSession` transport is the default; bring your own for certificate pinning or a proxy.
public protocol FlagTransport: Sendable {
    /// Sends `request`; `timeout` is a backstop only (whole seconds on Linux).
    func send(_ request: FlagRequest, maxBytes: Int, timeout: TimeInterval) async throws(FetchError) -> FlagResponse
    /// Cancels everything in flight and refuses new requests. Idempotent.
    func shutdown()
}
