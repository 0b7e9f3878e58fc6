import Foundation

extension ProviderState {
    /// The streams that should be open now: those the last full answer advertised, while
    /// streams are on, the path is up, the provider runs (not shut down, not stopped by a
    /// fatal error), and the app has not been in the background past its grace.
    var wantedStreams: [EventStreamLink] {
        guard configuration.changeStreams, pathUp, !shutDown, !fatal, !streams.closedForInactivity else { return [] }
        return streams.advertised ?? []
    }

    /// Asks for the wanted streams when they differ from those open (every transition ends here).
    mutating func reconcileStreams() -> [ProviderEffect] {
        let wanted = wantedStreams
        guard wanted != streams.open else { return [] }
        streams.open = wanted
        return [.setStreams(wanted)]
    }

    /// A stream's signal. An event or a (re)connection asks for a fetch: at once when none is
    /// in flight, else once more when it ends — the fetch in flight may have been answered
    /// before the change, so joining it could miss it; any number of signals meanwhile
    /// coalesce into that one fetch (the latest metadata wins).
    mutating func streamSignal(_ signal: ChangeStream.Signal, from link: EventStreamLink, at time: ProviderTime) -> [ProviderEffect] {
        guard streams.open.contains(link), !shutDown else { return [] }
        let name = link.description
        var effects: [ProviderEffect]
        let trigger: FetchTrigger
        switch signal {
        case .closed(let reason, let retryIn):
            return [.emit(.streamClosed(stream: name, reason: reason, retryInMilliseconds: retryIn.map { Int($0.milliseconds) }))]
        case .opened:
            effects = [.emit(.streamOpened(stream: name))]
            trigger = .stream(nil)
        case .refetch(let etag, let lastModified):
            effects = [.emit(.changeNotified(stream: name, etag: etag))]
            trigger = .stream(RefetchHint(etag: etag, lastModified: lastModified, endpoint: link.endpoint))
        }
        return effects + requestFetch(trigger, at: time)
    }

    /// Starts a fetch for `trigger`, or queues it behind the one in flight.
    private mutating func requestFetch(_ trigger: FetchTrigger, at time: ProviderTime) -> [ProviderEffect] {
        guard skipReason(at: time.elapsed) == nil else { return [] }
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

    /// Foreground: the background close is called off; after a long inactivity (the streams
    /// were closed) an unconditional fetch at once, else a fetch when the last answer is older
    /// than ``FeatureFlagProvider/Configuration/foregroundRefreshAge``; the poll timer is
    /// rescheduled. Background: the poll timer stops and the streams close after the grace.
    mutating func lifecycle(foreground: Bool, at time: ProviderTime) -> [ProviderEffect] {
        guard foreground != streams.foreground, !shutDown else { return [] }
        streams.foreground = foreground
        streams.inactivityToken += 1
        guard foreground else {
            let delays = streams.open.map(\.inactivityDelay) + [configuration.backgroundStreamGrace]
            return [.reschedule, .scheduleInactivity(token: streams.inactivityToken, after: delays.min() ?? .zero)]
        }
        var effects: [ProviderEffect] = [.reschedule]
        if streams.closedForInactivity {
            streams.closedForInactivity = false
            effects += requestFetch(.unconditional, at: time)
        } else if streams.lastAnswer.map({ time.elapsed - $0 >= configuration.foregroundRefreshAge }) ?? true {
            effects += requestFetch(.ask, at: time)
        }
        return effects
    }
}
