/// Fan-out of values to any number of `AsyncStream` subscribers.
///
/// `yield` copies the continuations out under the lock and resumes them after unlocking,
/// so a slow consumer never blocks a publisher; each subscriber keeps the newest
/// `bufferSize` values it has not read yet. With `replay > 0` a new subscriber first
/// receives up to that many of the most recent values. Publishers that need a strict
/// order across threads serialise their own calls.
package final class Broadcaster<Element: Sendable>: Sendable {
    private struct Subscribers {
        var next = 0
        /// By subscription id, in subscription order. An array, not a dictionary: there are a
        /// handful, and a dictionary of a new type costs a process ~10 µs to set up the first
        /// time — at launch, where every broadcaster is made.
        var all: [(id: Int, continuation: AsyncStream<Element>.Continuation)] = []
        var history: [Element] = []
        var finished = false
    }

    private let subscribers = Locked(Subscribers())
    private let bufferSize: Int
    private let replay: Int

    /// A broadcaster whose subscribers buffer up to `bufferSize` unread values and start
    /// with the last `replay` values.
    package init(bufferSize: Int = 128, replay: Int = 0) {
        self.bufferSize = bufferSize
        self.replay = replay
    }

    /// A new stream that receives the replayed history, then every value yielded from now on.
    package func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: .bufferingNewest(bufferSize))
        let id: Int? = subscribers.withLock { s in
            // Replay under the lock so no newer value can overtake the history.
            for old in s.history { continuation.yield(old) }
            if s.finished { return nil }
            let id = s.next
            s.next += 1
            s.all.append((id, continuation))
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            self?.subscribers.withLock { $0.all.removeAll { $0.id == id } }
        }
        return stream
    }

    /// Sends `value` to every current subscriber; unless `remember` is false, it is also kept
    /// for replay to later subscribers.
    package func yield(_ value: Element, remember: Bool = true) {
        let replay = remember ? self.replay : 0
        let targets = subscribers.withLock { s in
            if replay > 0 {
                s.history.append(value)
                if s.history.count > replay { s.history.removeFirst(s.history.count - replay) }
            }
            return s.all.map(\.continuation)
        }
        for continuation in targets { continuation.yield(value) }
    }

    /// Ends every stream; later subscribers get the history and a finished stream.
    package func finish() {
        let targets = subscribers.withLock { s in
            s.finished = true
            defer { s.all.removeAll() }
            return s.all.map(\.continuation)
        }
        for continuation in targets { continuation.finish() }
    }

    /// The values a new subscriber would be replayed, oldest first.
    package var history: [Element] { subscribers.withLock { $0.history } }

    /// How many streams are subscribed now.
    package var subscriberCount: Int { subscribers.withLock { $0.all.count } }

    deinit {
        let targets = subscribers.withLock { $0.all.map(\.continuation) }
        for continuation in targets { continuation.finish() }
    }
}
