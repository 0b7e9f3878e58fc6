import Foundation

extension ProviderState {
    /// The advertised streams, while streams are on, `run()` runs with a path, and the app is not inactive.
    var wantedStreams: [EventStreamLink] {
        guard configuration.changeStreams, running, pathUp, !shutDown, !fatal, !streams.closedForInactivity else { return [] }
        return streams.advertised ?? []
    }

    /// Asks for the wanted streams when they differ from those open (every transition ends here).
    mutating func reconcileStreams() -> [ProviderEffect] {
        let wanted = wantedStreams
        guard wanted != streams.open else { return [] }
        streams.open = wanted
        return [.setStreams(wanted)]
    }

    /// A stream's signal. An event, (re)connection or half-open close asks for a fetch: now if none is in
    /// flight, else once more after it (joining could miss the change); signals meanwhile coalesce.
    mutating func streamSignal(_ signal: ChangeStream.Signal, from link: EventStreamLink, at time: ProviderTime) -> [ProviderEffect] {
        guard streams.open.contains(link), !shutDown else { return [] }
        let name = link.description
        var effects: [ProviderEffect]
        let trigger: FetchTrigger
        switch signal {
        case .closed(let reason, let retryIn, let halfOpen, let refused):
            let closed = ProviderEffect.emit(.streamClosed(stream: name, reason: reason, retryInMilliseconds: retryIn.map { Int($0.milliseconds) }))
            // A kept link the service now refuses (URL expired): forget kept links, ask for current ones.
            if refused, streams.restored {
                streams.restored = false
                streams.advertised = nil
                if streams.deferred != nil { return [closed] + startDeferred(unconditional: true) }
                return [closed] + requestFetch(.unconditional, at: time)
            }
            // The launch fetch waited for this stream: it will not open now.
            if streams.deferred != nil { return [closed] + startDeferred() }
            // A silent connection may have missed a change: fetch now, not after the reconnect backoff.
            guard halfOpen else { return [closed] }
            return [closed] + requestFetch(.stream(nil), at: time)
        case .opened:
            streams.openedOnce = true
            effects = [.emit(.streamOpened(stream: name))]
            // The launch fetch held for this opening is the fetch the opening asks for.
            if streams.deferred != nil { return effects + startDeferred() }
            if link.sendsValuesOnConnect { return effects }
            trigger = .stream(nil)
        case .refetch(let etag, let lastModified):
            effects = [.emit(.changeNotified(stream: name, etag: etag))]
            trigger = .stream(RefetchHint(etag: etag, lastModified: lastModified, endpoint: link.endpoint))
        case .event(.fetch(let via)):
            effects = [.emit(.changeNotified(stream: name, etag: nil, via: via))]
            trigger = .stream(nil)
        case .event(.malformed(let event, let reason)):
            return [.emit(.error(.parseError, message: "stream \(name): a \(event) event was dropped: \(reason)"))]
        case .event(.values(let flags, let via)):
            effects = [.emit(.changeNotified(stream: name, etag: nil, via: via))]
            // Merged members each have their own values: only the polling endpoint answers for all.
            trigger = members.count == 1 ? .streamed(flags, endpoint: link.endpoint) : .stream(nil)
        }
        return effects + requestFetch(trigger, at: time)
    }

    /// Starts a fetch for `trigger`, or queues it behind the one in flight.
    mutating func requestFetch(_ trigger: FetchTrigger, at time: ProviderTime) -> [ProviderEffect] {
        // Streamed values need no request: only a shutdown stops them.
        if case .streamed = trigger {
            guard !shutDown else { return [] }
        } else {
            guard skipReason(at: time.elapsed) == nil else { return [] }
        }
        if flight != nil {
            // An unconditional fetch outranks a stream's; a newer stream hint replaces an older.
            if streams.queued != .unconditional { streams.queued = trigger }
            return []
        }
        return startFetch(trigger, waiters: [])
    }

    /// After a fetch ends: the one a signal queued meanwhile.
    mutating func fetchQueued(at time: ProviderTime) -> [ProviderEffect] {
        guard flight == nil, let queued = streams.queued else { return [] }
        streams.queued = nil
        return requestFetch(queued, at: time)
    }

    // MARK: Crash-loop guard

    /// In safe mode, an answer repeating the crash values is held back (`ERROR`); nil when it may be served.
    mutating func holdSafeMode(against prepared: PreparedSnapshot, at time: ProviderTime) -> [ProviderEffect]? {
        guard let crash = safeMode?.crashDigest, !prepared.killed, LaunchJournal.digest(prepared.snapshot) == crash else { return nil }
        return relabel(.error, reason: "safe mode: the service still sends the values the crashes happened under", at: time)
            + releaseSettleWaiters()
    }

    /// Leaves safe mode (when in it), saying why; the automatic healthy mark's wait starts again.
    mutating func leaveSafeMode(because reason: String) -> [ProviderEffect] {
        guard safeMode != nil else { return [] }
        safeMode = nil
        let healthTimer = healthSleep.wake()
        return [.emit(.safeModeLeft(reason: reason))] + (healthTimer.isEmpty ? [] : [.reschedule(healthTimer)]) + serveOverrides()
    }

    /// The app is healthy: record its values. The app's own mark ends safe mode; the automatic one never does.
    mutating func markHealthy(automatic: Bool, held: HeldAnswer?, at time: ProviderTime) -> [ProviderEffect] {
        guard !shutDown, !(automatic && safeMode != nil) else { return [] }
        journal.unhealthyLaunches = 0
        journal.crashDigest = nil
        journal.keepHealthy(served.prepared.snapshot, for: context.fingerprint)
        var effects: [ProviderEffect] = [.writeJournal(journal)]
        guard safeMode != nil, let held else { return effects }
        effects += leaveSafeMode(because: "the app marked itself healthy")
        let old = served.serve(held.prepared, source: held.source, reasonOverride: held.prepared.reasonOnDevice(at: time.date))
        effects.append(.publish(from: old, to: served))
        return effects
    }

    /// Foreground: fetch (unconditionally after long inactivity, else if the last answer is older than
    /// ``FeatureFlagProvider/Configuration/foregroundRefreshAge``). Background: streams close after the grace.
    mutating func lifecycle(foreground: Bool, at time: ProviderTime) -> [ProviderEffect] {
        guard foreground != streams.foreground, !shutDown else { return [] }
        streams.foreground = foreground
        streams.inactivityToken += 1
        guard foreground else {
            // A fetch in flight now may be frozen mid-request by a suspension.
            flight?.spannedBackground = true
            let delays = streams.open.map(\.inactivityDelay) + [configuration.backgroundStreamGrace]
            return [reschedule(), .scheduleInactivity(token: streams.inactivityToken, after: delays.min() ?? .zero)]
        }
        // Values that passed their TTL in the background read STALE at once, fetch or not.
        var effects: [ProviderEffect] = [reschedule()] + reassessExpiry(at: time)
        let interrupted = streams.fetchOnForeground
        streams.fetchOnForeground = false
        if streams.closedForInactivity {
            streams.closedForInactivity = false
            effects += requestFetch(.unconditional, at: time)
        } else if interrupted || streams.lastAnswer.map({ time.elapsed - $0 >= configuration.foregroundRefreshAge }) ?? true {
            effects += requestFetch(.ask, at: time)
        }
        return effects
    }
}
