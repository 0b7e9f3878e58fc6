import Dispatch

/// The one serial queue on which the package calls into `URLSession`: sessions made and
/// invalidated, tasks created, resumed and cancelled — by every transport and every change
/// stream of the process.
///
/// On Linux each of those calls waits for FoundationNetworking's work queue, which all the
/// process's sessions share. With a queue per transport and per stream, each waiting call held
/// a dispatch thread of its own; a process with a few hundred of them (many providers, a
/// reconnection storm, a parallel test run) used up the thread pool (255 threads), and the work
/// queue they waited for found no thread left to run on: every fetch and stream of the process
/// hung for good. One queue holds one thread at most. The calls are short and were serialised
/// by that work queue anyway; on Apple platforms they are not known to wait.
enum SessionCalls {
    /// The queue.
    static let queue = DispatchQueue(label: "FeatureFlags.URLSession.calls")
}
