import Dispatch

/// The one serial queue for every `URLSession` call of the process. On Linux each call waits on
/// FoundationNetworking's shared queue; a queue per transport could exhaust the thread pool and hang.
enum SessionCalls {
    /// The queue.
    static let queue = DispatchQueue(label: "FeatureFlags.URLSession.calls")
}
