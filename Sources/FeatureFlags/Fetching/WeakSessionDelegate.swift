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
    /// The redirect rule every flag-service session keeps: HTTPS except to loopback, unless
    /// `allowInsecureHTTP`. Returns why a redirect is refused, or nil to follow it.
    func refusal(ofRedirectTo request: URLRequest, allowInsecureHTTP: Bool) -> FetchError? {
        guard let url = request.url else { return .invalidRequest(FlagError(.general, "a redirect without a URL")) }
        do {
            try URLPolicy.check(url, allowInsecureHTTP: allowInsecureHTTP)
            return nil
        } catch {
            return error
        }
    }

    /// `request`, the redirect of `task`, as it may be sent: to the origin `task` started at,
    /// unchanged; to any other origin, without the header fields that may carry a credential —
    /// `Authorization`, an API key under any name the app or a service's format chose — keeping
    /// only the fields of the exchange itself (``redirectKeptFields``). URLSession copies every
    /// field to the new request whatever its origin, so a flag service that redirected (or an
    /// attacker who could make it) would otherwise receive the app's key elsewhere. The origin
    /// compared is the first request's, so a chain that leaves it never gets them back; where
    /// either origin cannot be told, the fields are left behind too.
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

/// The header fields a redirect to another origin keeps (lowercased): what the exchange needs to
/// be understood. Every other field stays with the origin it was given for.
let redirectKeptFields: Set<String> = [
    "accept", "accept-encoding", "accept-language", "cache-control", "connection", "content-length", "content-type",
    "if-modified-since", "if-none-match", "last-event-id", "user-agent",
]

/// A session's delegate that holds its owner weakly: a session keeps its delegate alive until
/// it is invalidated, so a delegate holding the owner strongly would keep an owner nobody
/// shut down alive forever. With the owner gone, answers and redirects are refused.
final class WeakSessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    /// The owner, held weakly in a value: a class's `weak let` needs Swift 6.2 (the package
    /// builds with 6.0), and a `weak var` of the class would make it mutable, so not `Sendable`.
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
