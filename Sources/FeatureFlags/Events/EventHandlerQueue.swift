import Dispatch

/// Calls an app's event handler with every event, in order, on a private serial queue —
/// never on the thread that emitted the event, which may hold a lock the handler could need
/// (a handler is free to read flags or call `identify` from inside).
package final class EventHandlerQueue: Sendable {
    private let handler: @Sendable (FlagEvent) -> Void
    private let queue = DispatchQueue(label: "FeatureFlags.eventHandler")

    /// Delivers events to `handler`.
    package init(_ handler: @escaping @Sendable (FlagEvent) -> Void) { self.handler = handler }

    /// Queues `event` for the handler.
    package func deliver(_ event: FlagEvent) {
        let handler = self.handler
        queue.async { handler(event) }
    }

    /// Waits until every event queued so far has been handled (tests, shutdown).
    package func drain() { queue.sync {} }
}
