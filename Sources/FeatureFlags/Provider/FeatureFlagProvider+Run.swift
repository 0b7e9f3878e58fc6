import Foundation

extension FeatureFlagProvider {
    // MARK: Running

    /// Fetches at once, then polls every ``Configuration/pollInterval`` (± jitter) until the
    /// calling task is cancelled or ``shutdown()`` is called. Failures back off exponentially
    /// with full jitter up to the poll interval; 429/503 wait at least their `Retry-After`.
    /// Without a network path nothing is sent; the path's return (or ``identify(_:)``)
    /// triggers a fetch at once. Returns after a fatal error. Only one `run()` at a time:
    /// a second call returns immediately.
    public func run() async {
        // The first run() claims the loop; the same transition opens the change streams.
        guard ask({ .running(true, answer: $0) }, unanswered: false) else { return }
        let watcher = Task { [reachability, weak self] in
            for await reachable in reachability.updates() {
                guard let self else { return }
                self.transition(.pathChanged(self.pathIsUp(reported: reachable)))
            }
        }
        let lifecycleWatcher = Task { [lifecycle, weak self] in
            for await foreground in lifecycle.updates() {
                guard let self else { return }
                self.transition(.lifecycle(foreground: foreground))
            }
        }
        let healthTimer = Task { [weak self] in await self?.markHealthyInTime() }
        defer {
            watcher.cancel()
            lifecycleWatcher.cancel()
            healthTimer.cancel()
            transition(.running(false))
        }
        // Launched in the background (a background fetch, a silent push): no poll until the
        // app comes to the foreground; `refreshInBackground(deadline:)` is the way to fetch.
        var outcome: FetchOutcome = lifecycle.isForeground ? await refresh() : .skipped("in the background")
        while !Task.isCancelled {
            let next = ask({ .planNextPoll(after: outcome, answer: $0) }, unanswered: .stop)
            guard case .sleep(let deadline) = next else { return }
            await sleep(until: deadline)
            if Task.isCancelled { return }
            // Fetch when the timer is due or a wake-up asked for it; a wake-up that only
            // reschedules (the app changed state) computes the next deadline again.
            let due = deadline.map { clock.now() >= $0 } ?? false
            guard ask({ .takeFetchRequest(timerDue: due, answer: $0) }, unanswered: false) else { continue }
            outcome = await refresh()
        }
    }

    /// The crash-loop guard's automatic mark: after ``CrashLoopGuard/healthyAfter`` in the
    /// foreground without a break (a trip to the background starts the wait again). In safe
    /// mode the mark is not taken: the wait starts again when safe mode ends (the operator's
    /// fix arrived), so a launch the fix saved still becomes healthy on its own.
    func markHealthyInTime() async {
        guard let after = configuration.crashLoopGuard?.healthyAfter else { return }
        while !Task.isCancelled {
            let (token, foreground) = cell.inspect { ($0.streams.inactivityToken, $0.streams.foreground) }
            guard foreground else {
                await waitForWakeUp(.healthTimer)
                continue
            }
            let deadline = clock.now() + after
            do {
                try await clock.sleep(until: deadline)
            } catch {
                return
            }
            let (unbroken, safe) = cell.inspect { ($0.streams.inactivityToken == token && $0.streams.foreground, $0.safeMode != nil) }
            if unbroken, safe {
                // Woken when safe mode ends (or the app changes state): then count again.
                await waitForWakeUp(.healthTimer)
            } else if unbroken {
                markHealthy(automatic: true)
                return
            }
        }
    }

    /// Sleeps until `deadline` (forever when nil) or a wake-up, whichever comes first.
    func sleep(until deadline: Duration?) async {
        let clock = self.clock
        await withTaskGroup(of: Void.self) { group in
            if let deadline { group.addTask { try? await clock.sleep(until: deadline) } }
            group.addTask { await self.waitForWakeUp(.runLoop) }
            await group.next()
            group.cancelAll()
        }
    }

    /// Returns when the state wakes `sleeper` (at once if it was woken while nobody slept, or
    /// after shutdown), or when the task is cancelled. Who sleeps is part of the state.
    func waitForWakeUp(_ sleeper: ProviderState.Sleeper) async {
        // A sleep is named by the address of an object that lives as long as the sleep.
        let token = WaitToken()
        let id = Int(bitPattern: UInt(bitPattern: ObjectIdentifier(token)))
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                transition(.sleep(sleeper, id: id, resume: { continuation.resume() }))
                // Cancelled before the sleep was registered: the handler found no sleeper.
                if Task.isCancelled { transition(.stopSleeping(sleeper, id: id)) }
            }
        } onCancel: {
            self.transition(.stopSleeping(sleeper, id: id))
        }
        withExtendedLifetime(token) {}
    }

    // MARK: Waiting

    /// Waits until the first fetch for the current context has ended — `READY`, `ERROR`,
    /// `STALE` or `FATAL` — or `timeout` passes on the provider's clock, and returns the status.
    /// For a splash screen: values are readable all along; this only says whether they are fresh.
    /// A cancelled task's wait returns at once, with the status then.
    public func waitUntilReady(timeout: Duration) async -> ProviderStatus {
        let deadline = clock.now() + timeout
        let clock = self.clock
        // A wait is named by the address of an object that lives as long as the wait.
        let token = WaitToken()
        let id = Int(bitPattern: UInt(bitPattern: ObjectIdentifier(token)))
        let timer = Locked<Task<Void, Never>?>(nil)
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // Registered before the timer exists: a timeout finds the waiter or nothing.
                transition(.awaitSettled(id: id, resume: { continuation.resume() }))
                // A task cancelled before this point ran its cancellation handler already, when
                // there was no wait to stop: stop it now, or it lasts until the timeout.
                if Task.isCancelled {
                    transition(.stopWaiting(id: id))
                    return
                }
                // The timer holds the token, so its address names no other wait while the
                // timer lives, and acts only when it was not cancelled.
                let task = Task {
                    do {
                        try await clock.sleep(until: deadline)
                        _ = withExtendedLifetime(token) { self.transition(.stopWaiting(id: id)) }
                    } catch {}
                }
                timer.withLock { $0 = task }
            }
        } onCancel: {
            self.transition(.stopWaiting(id: id))
        }
        timer.withLock { $0 }?.cancel()
        withExtendedLifetime(token) {}
        return status
    }
}

/// Names one wait (for readiness, or a sleep until a wake-up) by its address.
private final class WaitToken: Sendable {}
