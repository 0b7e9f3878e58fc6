import Foundation
import FeatureFlags

/// A one-shot wake-up for a single waiting task (the watch command's end): ``fire()`` before
/// ``wait()`` is remembered.
final class Wakeup: Sendable {
    init() {}
    /// Whether it was fired with nobody waiting, and how to resume who waits.
    private struct State {
        var pending = false
        var waiter: (@Sendable () -> Void)?
    }

    private let state = Locked(State())

    /// Wakes the waiter, or the next one to wait.
    func fire() {
        let waiter = state.withLock { s -> (@Sendable () -> Void)? in
            guard let waiter = s.waiter else {
                s.pending = true
                return nil
            }
            s.waiter = nil
            return waiter
        }
        waiter?()
    }

    /// Returns when fired (at once if fired since the last wait) or when the task is cancelled.
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s -> Bool in
                    if s.pending || Task.isCancelled {
                        s.pending = false
                        return true
                    }
                    s.waiter = { continuation.resume() }
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { s -> (@Sendable () -> Void)? in
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?()
        }
    }
}
