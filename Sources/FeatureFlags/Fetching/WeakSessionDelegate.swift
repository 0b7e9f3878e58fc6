import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What a `URLSession`'s delegate hands on to the object that owns the session.
protocol SessionEventHandler: AnyObject, Sendable {
    /// The answer's head arrived: allow the body, or cancel.
    func session(
        received response: URLResponse, for task: URLSessionDataTask,
        decide: @escaping @Sendable (URLSession.ResponseDisposition) -> Void)
    /// Body bytes arrived.
    func session(received data: Data, for task: URLSessionDataTask)
    /// The task ended, with an error or without.
    func session(completed task: URLSessionTask, error: (any Error)?)
    /// The server redirects `task` to `request`: follow (pass it on) or refuse (nil).
    func session(redirecting task: URLSessionTask, to request: URLRequest, decide: @escaping @Sendable (URLRequest?) -> Void)
}

extension SessionEventHandler {
    /// Why a redirect is refused under the HTTPS rule (`URLPolicy`), or nil to follow it.
    func refusal(ofRedirectTo request: URLRequest, allowInsecureHTTP: Bool) -> FetchError? {
        guard let url = request.url else { return .invalidRequest(FlagError(.general, "a redirect without a URL")) }
        do {
            try URLPolicy.check(url, allowInsecureHTTP: allowInsecureHTTP)
            return nil
        } catch {
            return error
        }
    }

    /// The redirect as sent: to another (or unknown) origin only ``redirectKeptFields`` go, as URLSession would copy credentials.
    func credentialsLeftBehind(in request: URLRequest, redirecting task: URLSessionTask) -> URLRequest {
        let from = task.originalRequest?.url.flatMap(EventStreamLink.origin(of:))
        if let from, from == request.url.flatMap(EventStreamLink.origin(of:)) { return request }
        guard let fields = request.allHTTPHeaderFields else { return request }
        var stripped = request
        for name in fields.keys where !redirectKeptFields.contains(name.lowercased()) {
            stripped.setValue(nil, forHTTPHeaderField: name)
        }
        return stripped
    }
}

/// The header fields (lowercased) a redirect to another origin keeps; none carries a credential.
let redirectKeptFields: Set<String> = [
    "accept", "accept-encoding", "accept-language", "cache-control", "connection", "content-length", "content-type",
    "if-modified-since", "if-none-match", "last-event-id", "user-agent",
]

/// A session delegate holding its owner weakly (the session retains it); with the owner gone, it refuses.
final class WeakSessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    /// The owner, weak inside a value: `weak let` needs Swift 6.2 and `weak var` breaks `Sendable`.
    private struct Owner: Sendable {
        weak var handler: (any SessionEventHandler)?
    }

    private let owner: Owner
    private var handler: (any SessionEventHandler)? { owner.handler }

    init(_ handler: any SessionEventHandler) { owner = Owner(handler: handler) }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        guard let handler else { return completionHandler(.cancel) }
        handler.session(received: response, for: dataTask, decide: completionHandler)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        handler?.session(received: data, for: dataTask)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        handler?.session(completed: task, error: error)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        guard let handler else { return completionHandler(nil) }
        handler.session(redirecting: task, to: request, decide: completionHandler)
    }
}
