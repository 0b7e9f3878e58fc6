/// Sends changes and events to subscribers and the handler; one writer at a time, unlocked.
package final class FlagPublisher: Sendable {
    /// Subscribers to value changes.
    package var changes: Broadcaster<FlagChange> {
        changeBroadcaster.withLock { made in
            if let made { return made }
            let broadcaster = Broadcaster<FlagChange>(fold: FlagPublisher.merge)
            made = broadcaster
            return broadcaster
        }
    }
    /// Made by the first subscription, sparing launch the generic class's set-up.
    private let changeBroadcaster = Locked<Broadcaster<FlagChange>?>(nil)
    /// Subscribers to events; new ones get recent history, laggards an `events_dropped` count.
    package let events = Broadcaster<FlagEvent>(replay: 32, fold: { told, _ in .eventsDropped(count: (told?.droppedCount ?? 0) + 1) })

    /// Merges changes a lagging reader lost into one: all their keys, the newest snapshot.
    private static let merge: @Sendable (FlagChange?, FlagChange) -> FlagChange = { merged, lost in
        (keys: (merged?.keys ?? []).union(lost.keys), snapshot: lost.snapshot, killSwitchActive: lost.killSwitchActive)
    }
    /// The app's event handler, if it gave one.
    let handler: EventHandlerQueue?

    /// A publisher that also calls `handler` with every event.
    package init(handler: (@Sendable (FlagEvent) -> Void)? = nil) {
        self.handler = handler.map { EventHandlerQueue($0) }
    }

    /// Sends `event` to subscribers and the handler; analytics events are not replayed.
    package func emit(_ event: FlagEvent) {
        events.yield(event, remember: !event.isAnalytics)
        handler?.deliver(event)
    }

    /// Sends and returns a ``FlagEvent/tracked(_:)`` event; nil for an empty name.
    @discardableResult
    func track(
        _ eventName: String, value: Double?, attributes: [String: FlagValue], context: @autoclosure () -> EventContext
    ) -> FlagTrackingEvent? {
        guard !eventName.isEmpty else { return nil }
        let event = FlagTrackingEvent(name: eventName, value: value, attributes: attributes, context: context())
        emit(.tracked(event))
        return event
    }

    /// Reports and returns the flags whose effective values differ (or a keyless change).
    @discardableResult
    func publish(from old: ServedState, to new: ServedState, base: ServingBase) -> Set<String> {
        var keys = new.prepared.table.changedNames(since: old.prepared.table)
        if old.overrides != nil || new.overrides != nil {
            let before = old.overrides?.values ?? [:]
            let after = new.overrides?.values ?? [:]
            keys = keys.filter { name in before[name] == nil || before[name] != after[name] }
            // And every flag whose overridden value itself differs.
            keys.formUnion(Set(before.keys).union(after.keys).filter { before[$0] != after[$0] })
        }
        if old.killed != new.killed {
            keys.formUnion(old.snapshot.flags.keys)
            keys.formUnion(new.snapshot.flags.keys)
            keys.formUnion(base.defaults.keys)
            for layer in [old.overrides, new.overrides] { if let layer { keys.formUnion(layer.values.keys) } }
            emit(.killSwitch(active: new.killed))
        }
        let missingReadingChanged = old.snapshot.missingFlagsAreOff != new.snapshot.missingFlagsAreOff && !new.killed
        let otherSnapshot = old.snapshot.version != new.snapshot.version || old.snapshot.contextFingerprint != new.snapshot.contextFingerprint
        if !keys.isEmpty || missingReadingChanged || otherSnapshot {
            changeBroadcaster.withLock { $0 }?.yield((keys: keys, snapshot: new.snapshot, killSwitchActive: new.killed))
            emit(.configurationChanged(keys: keys))
        }
        return keys
    }

    /// The most recent events (up to 32), oldest first.
    package var recentEvents: [FlagEvent] { events.history }

    /// Ends every change and event stream.
    package func finish() {
        changes.finish()  // made if need be: a later subscriber gets a finished stream
        events.finish()
    }
}
