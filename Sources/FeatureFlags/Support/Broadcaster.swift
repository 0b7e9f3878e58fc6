/// Fan-out of values to any number of `AsyncStream` subscribers.
///
/// `yield` copies the continuations out under the lock and resumes them after unlocking,
/// so a slow consumer never blocks a publisher; each subscriber keeps the newest
/// `bufferSize` values it has not read yet. With `replay > 0` a new subscriber first
/// receives up to that many of the most recent values. Publishers that need a strict
/// order across threads serialise their own calls. With a `fold`, a subscriber that fell
/// behind reads, in place of the values it lost, one value made of them (how many events, the
/// keys of the changes) where it lost them: the values dropped are always the oldest unread,
/// so that value comes at its next read, before the values it kept.
///
/// Its methods run as generic code, not specialised per element type (events, changes,
/// values, the network path …): one copy instead of one per type saves about 11 KB of an
/// app's binary, and a broadcast happens per change, not per read.
package final class Broadcaster<Element: Sendable>: Sendable {
    private struct Subscribers {
        var next = 0
        /// By subscription id, in subscription order. An array, not a dictionary: there are a
        /// handful, and a dictionary of a new type costs a process ~10 µs to set up the first
        /// time — at launch, where every broadcaster is made.
        var all: [(id: Int, continuation: AsyncStream<Element>.Continuation)] = []
        /// What each subscriber that fell behind lost since its last read, folded into one
        /// value (kept past ``finish()``: a reader still reads what its stream holds, and hears
        /// of the loss).
        var missed: [(id: Int, lost: Element)] = []
        var history: [Element] = []
        var finished = false
    }

    private let subscribers = Locked(Subscribers())
    private let bufferSize: Int
    private let replay: Int
    private let fold: (@Sendable (Element?, Element) -> Element)?

    /// A broadcaster whose subscribers buffer up to `bufferSize` unread values and start
    /// with the last `replay` values; `fold` makes what a subscriber that fell behind reads in
    /// place of the values it lost: the first lost value folded into nil, each later one into
    /// the result (nil: values are lost without a word).
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
        // Read through a stream of the reader's pace: each read first asks whether values were
        // lost since the last one (taken under the lock: each loss is told once).
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

    /// Sends `value` to every current subscriber; unless `remember` is false, it is also kept
    /// for replay to later subscribers.
    @_semantics("optimize.sil.specialize.generic.never")
    package func yield(_ value: Element, remember: Bool = true) {
        let replay = remember ? self.replay : 0
        // Without subscribers nothing of the continuations' types is touched: values yielded
        // at a client's launch, before anyone subscribes, cost the runtime no type set-up.
        let subscribed = subscribers.withLock { s -> Int? in
            if replay > 0 {
                s.history.append(value)
                if s.history.count > replay { s.history.removeFirst(s.history.count - replay) }
            }
            return s.all.isEmpty ? nil : s.next
        }
        if let subscribed { deliver(value, toIDsBelow: subscribed) }
    }

    /// Sends `value` to the subscribers whose id is below `limit` — those subscribed when it
    /// was yielded (a later one had it replayed, or subscribed after it).
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

/// A value's updates for any number of subscribers — each starts with the latest value, then
/// gets every change — whose ``Broadcaster`` is made at the first subscription. Reachability
/// monitors and lifecycles are built at every app's launch, and their streams are first wanted
/// by the provider's run loop: a generic class made at launch costs the runtime its type's
/// set-up before the first read.
internal struct LatestValueStream<Element: Sendable>: Sendable {
    private struct State {
        var latest: Element?
        var broadcaster: Broadcaster<Element>?
        var finished = false
    }

    private let state: Locked<State>

    /// A stream with no value yet (subscribers wait for the first ``yield(_:)``), or starting
    /// with `initial`.
    package init(_ initial: Element? = nil) { state = Locked(State(latest: initial)) }

    /// Makes `value` the latest and sends it to the subscribers (in order: callers that yield
    /// from several threads serialise their calls, as with ``Broadcaster``).
    @_semantics("optimize.sil.specialize.generic.never")
    package func yield(_ value: Element) {
        state.withLock { s in
            s.latest = value
            s.broadcaster?.yield(value)
        }
    }

    /// A stream that receives the latest value, then every later one; finished at once after
    /// ``finish()``.
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

/// An `AsyncStream`'s iterator shared with the closure of the stream that reads through it.
/// Safe to send because that closure is its only user and runs for one read at a time: an
/// `AsyncStream` has one reader, and a read waits for the one before it to return.
private final class StreamReader<Element: Sendable>: @unchecked Sendable {
    private var iterator: AsyncStream<Element>.Iterator

    init(_ stream: AsyncStream<Element>) { iterator = stream.makeAsyncIterator() }

    func next() async -> Element? { await iterator.next() }
}
