import Foundation

extension FeatureFlagProvider {
    // MARK: Running

    /// Fetches at once, then polls every ``Configuration/pollInterval`` (± jitter) until cancelled or
    /// ``shutdown()``. Failures back off with full jitter; 429/503 honour `Retry-After`; no path, no
    /// request. Returns after a fatal error. Only one `run()` at a time: a second returns immediately.
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
        // Launched in the background: no poll until the foreground (`refreshInBackground` fetches there).
        var outcome: FetchOutcome = lifecycle.isForeground ? await refresh() : .skipped("in the background")
        while !Task.isCancelled {
            let next = ask({ .planNextPoll(after: outcome, answer: $0) }, unanswered: .stop)
            guard case .sleep(let deadline) = next else { return }
            await sleep(until: deadline)
            if Task.isCancelled { return }
            // Fetch when due or asked; a reschedule-only wake-up just recomputes the deadline.
            let due = deadline.map { clock.now() >= $0 } ?? false
            guard ask({ .takeFetchRequest(timerDue: due, answer: $0) }, unanswered: false) else { continue }
            outcome = await refresh()
        }
    }

    /// Marks healthy after ``CrashLoopGuard/healthyAfter`` unbroken in the foreground, never in safe mode.
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
                await waitForWakeUp(.healthTimer)
            } else if unbroken {
                markHealthy(automatic: true)
                return
            }
        }
    }

    /// Sleeps until `deadline` (forever when nil) or a wake-up, whichever comes first.
    func sleep(until deadline: Duration?) async {
        await wait(until: deadline) { .sleep(.runLoop, id: $0, resume: $1) } stop: { .stopSleeping(.runLoop, id: $0) }
    }

    /// Returns when the state wakes `sleeper` (at once if already woken, or after shutdown), or on cancellation.
    func waitForWakeUp(_ sleeper: ProviderState.Sleeper) async {
        await wait { .sleep(sleeper, id: $0, resume: $1) } stop: { .stopSleeping(sleeper, id: $0) }
    }

    // MARK: Waiting

    /// Waits until the first fetch for the current context ends or `timeout` passes; returns the status.
    /// Values are readable all along; a cancelled task returns at once.
    public func waitUntilReady(timeout: Duration) async -> ProviderStatus {
        await wait(until: clock.now() + timeout) { .awaitSettled(id: $0, resume: $1) } stop: { .stopWaiting(id: $0) }
        return status
    }

    /// Registers a wait with the state (`start`) and returns when the state resumes it, or after `stop` is fed
    /// at `deadline` (none when nil) or on cancellation.
    private func wait(
        until deadline: Duration? = nil, _ start: (Int, @escaping ProviderState.Resume) -> ProviderInput,
        stop: @escaping @Sendable (Int) -> ProviderInput
    ) async {
        let clock = self.clock
        // A wait is named by the address of an object that lives as long as the wait.
        let token = WaitToken()
        let id = Int(bitPattern: UInt(bitPattern: ObjectIdentifier(token)))
        let timer = Locked<Task<Void, Never>?>(nil)
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // Registered before the timer exists: a timeout finds the waiter or nothing.
                transition(start(id, { continuation.resume() }))
                // Cancelled before this point: the handler found no wait to stop, so stop it now.
                if Task.isCancelled {
                    transition(stop(id))
                    return
                }
                guard let deadline else { return }
                // The timer holds the token, so its address names no other wait while the timer lives.
                let task = Task {
                    do {
                        try await clock.sleep(until: deadline)
                        _ = withExtendedLifetime(token) { self.transition(stop(id)) }
                    } catch {}
                }
                timer.withLock { $0 = task }
            }
        } onCancel: {
            self.transition(stop(id))
        }
        timer.withLock { $0 }?.cancel()
        withExtendedLifetime(token) {}
    }
}

/// Names one wait (for readiness, or a sleep until a wake-up) by its address.
private final class WaitToken: Sendable {}
