/// Fan-out to any number of `AsyncStream` subscribers; continuations resume outside the lock, so slow consumers never block.
/// Each keeps its newest `bufferSize` unread values, new ones get the last `replay`; cross-thread order is the caller's job.
/// Deliberately unspecialised per element type (saves ~11 KB of binary).
package final class Broadcaster<Element: Sendable>: Sendable {
    private struct Subscribers {
        var next = 0
        /// By subscription id, in order; an array, as a new dictionary type costs ~10 µs at launch.
        var all: [(id: Int, continuation: AsyncStream<Element>.Continuation)] = []
        /// What each lagging subscriber lost since its last read, folded (kept past ``finish()``).
        var missed: [(id: Int, lost: Element)] = []
        var history: [Element] = []
        var finished = false
    }

    private let subscribers = Locked(Subscribers())
    private let bufferSize: Int
    private let replay: Int
    private let fold: (@Sendable (Element?, Element) -> Element)?

    /// `fold` combines what a lagging subscriber lost (first into nil) into one value it reads next; nil: lost silently.
    package init(bufferSize: Int = 128, replay: Int = 0, fold: (@Sendable (Element?, Element) -> Element)? = nil) {
        self.bufferSize = bufferSize
        self.replay = replay
        self.fold = fold
    }

    /// A new stream that receives the replayed history, then every value yielded from now on.
    @_semantics("optimize.sil.specialize.generic.never")
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
        continuation.onTermination = { [weak self] termination in
            self?.subscribers.withLock { s in
                s.all.removeAll { $0.id == id }
                // A finished stream may still be read, the notice first; a cancelled one is not.
                if case .cancelled = termination { s.missed.removeAll { $0.id == id } }
            }
        }
        guard fold != nil else { return stream }
        // Each read first takes any loss since the last (under the lock: each loss is told once).
        let reader = StreamReader(stream)
        return AsyncStream { [weak self] in
            let lost = self?.subscribers.withLock { s -> Element? in
                guard let i = s.missed.firstIndex(where: { $0.id == id }) else { return nil }
                return s.missed.remove(at: i).lost
            }
            if let lost { return lost }
            return await reader.next()
        }
    }

    /// Sends `value` to every current subscriber, and keeps it for replay unless `remember` is false.
    @_semantics("optimize.sil.specialize.generic.never")
    package func yield(_ value: Element, remember: Bool = true) {
        let replay = remember ? self.replay : 0
        // Without subscribers no continuation type is touched: no runtime type set-up at launch.
        let subscribed = subscribers.withLock { s -> Int? in
            if replay > 0 {
                s.history.append(value)
                if s.history.count > replay { s.history.removeFirst(s.history.count - replay) }
            }
            return s.all.isEmpty ? nil : s.next
        }
        if let subscribed { deliver(value, toIDsBelow: subscribed) }
    }

    /// Sends `value` to subscribers with id below `limit`: those subscribed when it was yielded.
    @inline(never)
    @_semantics("optimize.sil.specialize.generic.never")
    private func deliver(_ value: Element, toIDsBelow limit: Int) {
        let targets = subscribers.withLock { s in s.all.filter { $0.id < limit }.map { ($0.id, $0.continuation) } }
        guard let fold else {
            for (_, continuation) in targets { continuation.yield(value) }
            return
        }
        for (id, continuation) in targets {
            // The oldest unread value made room for this one: the reader hears of it.
            guard case .dropped(let dropped) = continuation.yield(value) else { continue }
            subscribers.withLock { s in
                if let i = s.missed.firstIndex(where: { $0.id == id }) {
                    s.missed[i].lost = fold(s.missed[i].lost, dropped)
                } else {
                    s.missed.append((id, fold(nil, dropped)))
                }
            }
        }
    }

    /// Ends every stream; later subscribers get the history and a finished stream.
    @_semantics("optimize.sil.specialize.generic.never")
    package func finish() {
        let subscribed = subscribers.withLock { s -> Bool in
            s.finished = true
            return !s.all.isEmpty
        }
        if subscribed { finishAll() }
    }

    /// Ends the subscribers' streams (out of line: see ``yield(_:remember:)``).
    @inline(never)
    @_semantics("optimize.sil.specialize.generic.never")
    private func finishAll() {
        let targets = subscribers.withLock { s in
            defer { s.all.removeAll() }
            return s.all.map { $0.continuation }
        }
        for continuation in targets { continuation.finish() }
    }

    /// The values a new subscriber would be replayed, oldest first.
    package var history: [Element] { subscribers.withLock { $0.history } }

    /// How many streams are subscribed now.
    package var subscriberCount: Int { subscribers.withLock { $0.all.count } }

    deinit {
        if subscribers.withLock({ !$0.all.isEmpty }) { finishAll() }
    }
}

/// A value's updates for many subscribers, each starting with the latest; the ``Broadcaster`` is made lazily (cheaper launch).
internal struct LatestValueStream<Element: Sendable>: Sendable {
    private struct State {
        var latest: Element?
        var broadcaster: Broadcaster<Element>?
        var finished = false
    }

    private let state: Locked<State>

    /// A stream starting with `initial`, or with no value until the first ``yield(_:)``.
    package init(_ initial: Element? = nil) { state = Locked(State(latest: initial)) }

    /// The latest value, nil before the first.
    var latest: Element? { state.withLock { $0.latest } }

    /// Makes `value` the latest and sends it, unless it is the latest already (a first value always goes).
    func send(_ value: Element) where Element: Equatable {
        state.withLock { s in
            guard s.latest != value else { return }
            s.latest = value
            s.broadcaster?.yield(value)
        }
    }

    /// A stream of the latest value, then every later one; finished at once after ``finish()``.
    @_semantics("optimize.sil.specialize.generic.never")
    package func subscribe() -> AsyncStream<Element> {
        let broadcaster = state.withLock { s -> Broadcaster<Element> in
            if let made = s.broadcaster { return made }
            let made = Broadcaster<Element>(replay: 1)
            if let latest = s.latest { made.yield(latest) }
            if s.finished { made.finish() }
            s.broadcaster = made
            return made
        }
        return broadcaster.subscribe()
    }

    /// Ends every stream; later subscribers get the latest value and a finished stream.
    @_semantics("optimize.sil.specialize.generic.never")
    package func finish() {
        state.withLock { s in
            s.finished = true
            s.broadcaster?.finish()
        }
    }
}

/// An `AsyncStream` iterator; `@unchecked Sendable` is safe: only its stream's closure uses it, one read at a time.
private final class StreamReader<Element: Sendable>: @unchecked Sendable {
    private var iterator: AsyncStream<Element>.Iterator

    init(_ stream: AsyncStream<Element>) { iterator = stream.makeAsyncIterator() }

    func next() async -> Element? { await iterator.next() }
}
