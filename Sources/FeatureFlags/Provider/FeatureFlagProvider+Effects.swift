import Foundation

/// The effect runner: ``transition(_:)`` applies an input under the state lock and runs its effects outside it.
extension FeatureFlagProvider {
    /// Applies `input` under the lock, then runs its effects in order; those for a fetch's task are returned.
    @discardableResult
    func transition(_ input: ProviderInput) -> [ProviderEffect] {
        var launched: [(FetchTicket, Task<Void, Never>)] = []
        var stopping = false
        var signals: [() -> Void] = []
        let deferred: [ProviderEffect] = order.withLock { _ in
            let time = ProviderTime(elapsed: clock.now(), date: wallClock())
            let effects = cell.withLock { $0.apply(input, at: time) }
            return perform(effects, at: time.elapsed, launched: &launched, stopping: &stopping, signals: &signals)
        }
        // Resume and cancel outside every lock of ours: a task holds its own lock while its
        // cancellation handler calls `transition`, so doing this under `order` deadlocks.
        for signal in signals { signal() }
        // The app's own pieces stop outside our locks: a slow or re-entrant one stalls only itself.
        if stopping {
            fetcher.shutdown()
            reachability.stop()
            lifecycle.stop()
        }
        for (ticket, task) in launched { transition(.launched(ticket, task)) }
        return deferred
    }

    /// Applies the input `question` makes; returns what the state answered (`unanswered` if nothing).
    func ask<Answer: Sendable>(
        _ question: (@escaping @Sendable (Answer) -> Void) -> ProviderInput, unanswered: Answer
    ) -> Answer {
        let answer = Locked(unanswered)
        transition(question { value in answer.withLock { $0 = value } })
        return answer.withLock { $0 }
    }

    /// Feeds `input` to the state at `deadline` on the provider's clock, unless the provider is gone.
    func schedule(_ input: ProviderInput, at deadline: Duration) {
        let clock = self.clock
        Task { [weak self] in
            guard (try? await clock.sleep(until: deadline)) != nil else { return }
            self?.transition(input)
        }
    }

    /// Runs `effects` holding `order`, not the state lock; returns the deferred ones. Timers count from `now`.
    func perform(
        _ effects: [ProviderEffect], at now: Duration, launched: inout [(FetchTicket, Task<Void, Never>)], stopping: inout Bool,
        signals: inout [() -> Void]
    ) -> [ProviderEffect] {
        var deferred: [ProviderEffect] = []
        var changed: Set<String> = []
        // With a write, readiness waiters resume after it, so an app exiting then finds the answer on disk.
        let writes = effects.contains { effect in
            switch effect {
            case .persist, .holdKill: return true
            default: return false
            }
        }
        for effect in effects {
            switch effect {
            case .publish(let old, let new):
                changed = publisher.publish(from: old, to: new, base: base)
                cell.exposures?.servedChanged()
                if !changed.isEmpty {
                    let time = ProviderTime(elapsed: clock.now(), date: wallClock())
                    _ = cell.withLock { $0.apply(.valuesPublished, at: time) }
                }
            case .emit(let event):
                publisher.emit(event)
            case .startFetch(let plan):
                launched.append((plan.ticket, Task { await self.performFetch(plan) }))
            case .cancel(let task):
                signals.append { task.cancel() }
            case .answer(let waiters, let outcome):
                signals.append { for waiter in waiters { waiter(outcome) } }
            case .resume(let resume):
                if writes { deferred.append(effect) } else { signals.append(resume) }
            case .wake(let sleepers), .reschedule(let sleepers):
                signals.append { for resume in sleepers { resume() } }
            case .keepMembers(let members, let identity):
                store.keepMembers(members, of: identity.fingerprint)
            case .persist, .holdKill:
                deferred.append(effect)
            case .complete(let waiters, .updated, let latency):
                deferred.append(.complete(waiters, changed.isEmpty ? .unchanged : .updated(changed), latency: latency))
            case .complete:
                deferred.append(effect)
            case .stop:
                stopping = true
                streamSet.set([])
                publisher.finish()
            case .setStreams(let links):
                streamSet.set(links)
            case .scheduleInactivity(let token, let delay):
                schedule(.inactivityElapsed(token: token), at: now + delay)
            case .scheduleStreamWait(let ticket, let delay):
                schedule(.streamWaitElapsed(ticket), at: now + delay)
            case .writeJournal(let journal):
                // Effects leave in transition order on a serial queue: the newest journal lands last.
                let (publisher, store) = (self.publisher, self.store)
                io.async { if let failure = journal.save(besides: store) { publisher.emit(failure) } }
            }
        }
        return deferred
    }
}
