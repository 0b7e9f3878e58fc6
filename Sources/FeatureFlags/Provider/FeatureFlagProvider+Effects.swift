import Foundation

/// The effect runner: the provider's one way to change its state (``transition(_:)``: the
/// state's `apply` under the state lock) and the runner of what the state decided, in order,
/// outside that lock. The state (``ProviderState``) decides everything; this file only does it.
extension FeatureFlagProvider {
    /// Applies `input` under the lock, then runs its effects in order. Effects that must wait
    /// for a fetch's task (writes, answering its callers) are returned to that task.
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
        // Waiters are resumed and tasks cancelled outside every lock of ours: resuming or
        // cancelling a task takes that task's own lock, which the task holds while its
        // cancellation handler runs — and those handlers call `transition`. Under `order`, the
        // two waited for each other for good (found under ThreadSanitizer with a loaded machine).
        for signal in signals { signal() }
        // The app's own pieces are stopped outside every lock of ours: a slow or re-entrant
        // implementation (one that calls back into the provider) stalls only itself.
        if stopping {
            fetcher.shutdown()
            reachability.stop()
            lifecycle.stop()
        }
        for (ticket, task) in launched { transition(.launched(ticket, task)) }
        return deferred
    }

    /// Applies the input `question` makes and returns what the state answered through it
    /// (`unanswered` if it did not).
    func ask<Answer: Sendable>(
        _ question: (@escaping @Sendable (Answer) -> Void) -> ProviderInput, unanswered: Answer
    ) -> Answer {
        let answer = Locked(unanswered)
        transition(question { value in answer.withLock { $0 = value } })
        return answer.withLock { $0 }
    }

    /// Feeds `input` to the state at `deadline` on the provider's clock (unless the provider
    /// is gone by then).
    func schedule(_ input: ProviderInput, at deadline: Duration) {
        let clock = self.clock
        Task { [weak self] in
            guard (try? await clock.sleep(until: deadline)) != nil else { return }
            self?.transition(input)
        }
    }

    /// Runs `effects` (holding `order`, not the state lock); returns the deferred ones. A stop
    /// sets `stopping`: the caller stops the fetcher, reachability and lifecycle after unlocking.
    /// Resumptions and cancellations go to `signals`, in order, for the caller to run after
    /// unlocking. Timers count from `now`, the instant the state decided on them — not from
    /// whenever this runs (the state lock is released by then, and the clock may have moved).
    func perform(
        _ effects: [ProviderEffect], at now: Duration, launched: inout [(FetchTicket, Task<Void, Never>)], stopping: inout Bool,
        signals: inout [() -> Void]
    ) -> [ProviderEffect] {
        var deferred: [ProviderEffect] = []
        var changed: Set<String> = []
        // A fetch whose answer is written: those waiting for readiness are resumed after the
        // write (by the fetch's task), so that an app that exits right after
        // `waitUntilReady` finds the answer in the file at its next launch.
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
                // Effects leave in the order of their transitions and the queue is serial: the
                // file ends with the newest journal.
                let path = LaunchJournal.path(besides: store.fileURL)
                let publisher = self.publisher
                io.async {
                    do throws(FileIOError) {
                        try journal.write(to: path)
                    } catch {
                        publisher.emit(.fallbackWriteFailed(reason: "the launch journal: \(error.description)"))
                    }
                }
            }
        }
        return deferred
    }
}
