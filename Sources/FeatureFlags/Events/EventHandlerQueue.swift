import Dispatch

/// Calls an app's event handler in order on a private serial queue, never the emitting thread (which may hold a lock).
internal final class EventHandlerQueue: Sendable {
    /// How many events wait for the handler at most, by default.
    package static let defaultCapacity = 1_024

    /// The events waiting, oldest first, and how many were dropped since the last delivery.
    private struct Waiting {
        private var events: [FlagEvent] = []
        private var dropped = 0
        /// Whether a delivery loop is queued or running: it runs until nothing waits.
        var delivering = false

        /// Adds `event`, dropping the oldest waiting one if `capacity` wait (a short copy: events are two words).
        mutating func push(_ event: FlagEvent, capacity: Int) {
            if events.count >= capacity {
                events.removeFirst()
                dropped += 1
            }
            events.append(event)
        }

        /// The oldest waiting event and how many were dropped before it, or nil when none waits.
        mutating func pop() -> (event: FlagEvent, dropped: Int)? {
            guard !events.isEmpty else { return nil }
            defer { dropped = 0 }
            return (events.removeFirst(), dropped)
        }
    }

    private let handler: @Sendable (FlagEvent) -> Void
    private let capacity: Int
    private let queue = DispatchQueue(label: "FeatureFlags.eventHandler")
    private let waiting = Locked(Waiting())

    /// Delivers events to `handler`, keeping at most `capacity` (at least 1) waiting.
    package init(capacity: Int = EventHandlerQueue.defaultCapacity, _ handler: @escaping @Sendable (FlagEvent) -> Void) {
        self.handler = handler
        self.capacity = max(1, capacity)
    }

    /// Queues `event` for the handler; drops the oldest waiting event if `capacity` wait.
    package func deliver(_ event: FlagEvent) {
        let start = waiting.withLock { w -> Bool in
            w.push(event, capacity: capacity)
            if w.delivering { return false }
            w.delivering = true
            return true
        }
        if start { queue.async { self.deliverWaiting() } }
    }

    /// Hands the handler each waiting event, oldest first, without the lock held (it may emit events itself).
    private func deliverWaiting() {
        while true {
            let next = waiting.withLock { w in
                let next = w.pop()
                if next == nil { w.delivering = false }
                return next
            }
            guard let next else { return }
            if next.dropped > 0 { handler(.eventsDropped(count: next.dropped)) }
            handler(next.event)
        }
    }

    /// Waits until every event queued so far has been handled (tests, shutdown).
    package func drain() { queue.sync {} }
}
