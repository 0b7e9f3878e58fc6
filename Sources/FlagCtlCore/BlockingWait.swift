import Foundation

/// Runs `wait` — a call that blocks its thread until other work ends (the provider's
/// `waitForWrites()` and `waitForEventHandler()`) — on a dispatch thread, and returns when it
/// does. Called in place, it would hold one of Swift's cooperative threads, which are as few as
/// the cores and run every task of the command (its server's and its provider's among them).
func waitOffCooperativeThreads(_ wait: @escaping @Sendable () -> Void) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        DispatchQueue.global().async {
            wait()
            continuation.resume()
        }
    }
}
