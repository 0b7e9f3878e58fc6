/// Where a client's news goes: value changes to ``FeatureFlagClient/changes()`` subscribers,
/// events to ``FeatureFlagClient/events()`` subscribers and to the app's event handler. Called
/// after the client's lock is released, by one writer at a time (the client orders them).
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
    /// Made by the first subscription: a change with nobody subscribed reaches no one, and a
    /// generic class made at every launch costs the runtime its type's set-up before the
    /// first read.
    private let changeBroadcaster = Locked<Broadcaster<FlagChange>?>(nil)
    /// Subscribers to events; a new one first receives the recent history, and one that fell
    /// behind hears how many it missed (`events_dropped`), as the handler does.
    package let events = Broadcaster<FlagEvent>(replay: 32, fold: { told, _ in .eventsDropped(count: (told?.droppedCount ?? 0) + 1) })

    /// What a `changes()` reader that fell behind reads in place of the changes it lost: one
    /// change naming every key they named, with the newest of their snapshots. Its next reads
    /// are the changes it kept, newer still.
    private static let merge: @Sendable (FlagChange?, FlagChange) -> FlagChange = { merged, lost in
        (keys: (merged?.keys ?? []).union(lost.keys), snapshot: lost.snapshot, killSwitchActive: lost.killSwitchActive)
    }
    /// The app's event handler, if it gave one.
    let handler: EventHandlerQueue?

    /// A publisher that also calls `handler` with every event.
    package init(handler: (@Sendable (FlagEvent) -> Void)? = nil) {
        self.handler = handler.map { EventHandlerQueue($0) }
    }

    /// Sends `event` to event subscribers and the handler. Exposure and tracking events are
    /// not replayed to later subscribers: they would push the lifecycle out of the history.
    package func emit(_ event: FlagEvent) {
        events.yield(event, remember: !event.isAnalytics)
        handler?.deliver(event)
    }

    /// Sends a ``FlagEvent/tracked(_:)`` event for `eventName` in `context`; an empty name is
    /// ignored. Returns the event sent.
    @discardableResult
    func track(
        _ eventName: String, value: Double?, attributes: [String: FlagValue], context: @autoclosure () -> EventContext
    ) -> FlagTrackingEvent? {
        guard !eventName.isEmpty else { return nil }
        let event = FlagTrackingEvent(name: eventName, value: value, attributes: attributes, context: context())
        emit(.tracked(event))
        return event
    }

    /// Reports the flags whose effective values differ between `old` and `new` (every flag
    /// when the kill switch flips, with a kill-switch event) and returns them. A flag overridden
    /// alike before and after did not change, whatever the snapshot says. A change of how
    /// missing flags read (``FlagSnapshot/missingFlagsAreOff``) is reported even when no named
    /// flag changed: the flags it affects are in no table; so is another snapshot with the same
    /// values (its version or context differs), naming no key.
    @discardableResult
    func publish(from old: ServedValues, to new: ServedValues, base: ServingBase) -> Set<String> {
        // Over the read tables (the snapshot's entries over the bundled defaults): what readers
        // see, compared by the hashes the tables hold.
        var keys = new.prepared.table.changedNames(since: old.prepared.table)
        if old.overrides != nil || new.overrides != nil {
            let before = old.overrides?.values ?? [:]
            let after = new.overrides?.values ?? [:]
            keys = keys.filter { name in before[name] == nil || before[name] != after[name] }
            keys.formUnion(OverrideLayer.changedKeys(from: old.overrides, to: new.overrides))
        }
        if old.killed != new.killed {
            keys.formUnion(old.snapshot.flags.keys)
            keys.formUnion(new.snapshot.flags.keys)
            keys.formUnion(base.defaults.keys)
            for layer in [old.overrides, new.overrides] { if let layer { keys.formUnion(layer.values.keys) } }
            emit(.killSwitch(active: new.killed))
        }
        // How a flag absent from every table reads changed (`false` where a service leaves
        // disabled flags out, else the key's default): those keys may have changed, and no table
        // names them — the change goes out with the keys that can be named, so that
        // subscribers read again.
        let missingReadingChanged = old.snapshot.missingFlagsAreOff != new.snapshot.missingFlagsAreOff && !new.killed
        // Another snapshot with the same values (a new version, or another context's equal
        // values) is announced too, naming no key: what a screen shows of the snapshot moved.
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
