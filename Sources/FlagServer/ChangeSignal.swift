import Foundation

/// The served document's revision, for change streams to wait on: every change and `stop()`
/// wake every waiting stream at once.
final class ChangeSignal: @unchecked Sendable {
    // @unchecked: every stored property is read and written only with `condition` locked.

    /// What a waiting stream wakes up to.
    struct Snapshot {
        let revision: Int
        /// When the document last changed, for the event's `lastModified`.
        let changedAt: Date
        /// Counts wake-ups without a change (a stream fault was set or cleared).
        let nudges: Int
        let stopped: Bool
    }

    private let condition = NSCondition()
    private var revision = 0
    private var changedAt = Date()
    private var nudges = 0
    private var stopped = false

    /// The document is now at `revision`.
    func announce(_ revision: Int) {
        condition.lock()
        if revision > self.revision {
            self.revision = revision
            changedAt = Date()
        }
        condition.broadcast()
        condition.unlock()
    }

    /// Wakes every stream without a change (its settings changed).
    func wake() {
        condition.lock()
        nudges += 1
        condition.broadcast()
        condition.unlock()
    }

    /// Wakes every stream for good: the server is stopping.
    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    /// The state now.
    var current: Snapshot {
        condition.lock()
        defer { condition.unlock() }
        return Snapshot(revision: revision, changedAt: changedAt, nudges: nudges, stopped: stopped)
    }

    /// Waits until the revision is not `seen`, a nudge after `nudge`, the stop, or `deadline`.
    func wait(after seen: Int, nudge: Int, until deadline: Date) -> Snapshot {
        condition.lock()
        defer { condition.unlock() }
        while revision == seen, nudges == nudge, !stopped {
            if !condition.wait(until: deadline) { break }
        }
        return Snapshot(revision: revision, changedAt: changedAt, nudges: nudges, stopped: stopped)
    }
}
