import FlagServer
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The control for ``OversizedProbe``: the same answers fetched by a plain `URLSession` that
/// cancels each task once more than 1 MiB has arrived — what an app without this library would
/// do — so that the platform's share of the bytes read and kept is measured apart from ours.
enum PlainTransferProbe {
    /// Fetches `count` times, from each of `urls` in turn (after one round that sets the sessions
    /// up); `say` receives "growth BYTES" after each transfer has ended (resident memory above
    /// the mark after the first round) and "received BYTES" (what the task delivered, the bytes
    /// after its cancel included). With `returningFreeMemory`, free memory goes back to the
    /// system after each transfer, as the library's transport does after a refused one.
    /// Returns false when resident memory cannot be read here.
    static func run(urls: [URL], count: Int, returningFreeMemory: Bool, say: (String) -> Void) async -> Bool {
        let clients = urls.map { _ in CappedClient() }
        defer { for client in clients { client.session.invalidateAndCancel() } }
        return await OversizedProbe.measure(servers: urls.count, count: count, returningFreeMemory: returningFreeMemory, say: say) { index in
            "received \(await clients[index].fetch(urls[index]))"
        }
    }

    /// The "received" lines of a probe's output.
    static func received(in output: String) -> [Int] {
        output.split(separator: "\n").compactMap { $0.hasPrefix("received ") ? Int($0.dropFirst(9)) : nil }
    }
}

/// One session whose delegate cancels a task past 1 MiB and reports when it has ended.
private final class CappedClient: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // Safe: `received` and `ended` are read and written only under `lock`; `session` is made on first use
    // by the one probe task (`run`), before any delegate call can come.
    private let lock = NSLock()
    private var received = 0
    private var ended: CheckedContinuation<Int, Never>?
    private(set) lazy var session: URLSession = {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        return URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
    }()

    /// POSTs an empty context to `url`; returns the bytes delivered once the task has ended.
    func fetch(_ url: URL) async -> Int {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.httpBody = Data("{}".utf8)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        let task = session.dataTask(with: request)
        return await withCheckedContinuation { continuation in
            lock.withLock {
                received = 0
                ended = continuation
            }
            task.resume()
        }
    }

    /// Refuses a declared length over 1 MiB before the body, as the library's transport does.
    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        completionHandler(response.expectedContentLength > 1 << 20 ? .cancel : .allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let over = lock.withLock {
            received += data.count
            return received > 1 << 20
        }
        if over { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (continuation, count) = lock.withLock { () -> (CheckedContinuation<Int, Never>?, Int) in
            defer { ended = nil }
            return (ended, received)
        }
        continuation?.resume(returning: count)
    }
}
