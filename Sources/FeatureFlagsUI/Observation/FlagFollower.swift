package import FeatureFlags

/// What a SwiftUI view model shows of a client, and the work of keeping it current: follows a
/// client's changes and events on the main actor and hands each new ``State`` to `update` —
/// only when something a view shows moved. ``ObservableFlags`` (Observation, iOS 17+) and
/// ``ObservableFlagsObject`` (Combine, iOS 16+) are thin coats over it, so the logic is the
/// same on every platform and tested on Linux.
@MainActor
package final class FlagFollower {
    /// What a view model shows.
    package struct State: Equatable, Sendable {
        /// The snapshot served now.
        package var snapshot: FlagSnapshot
        /// The client's status now.
        package var status: ProviderStatus
        /// Whether the kill switch is on.
        package var isKillSwitchActive: Bool
        /// The keys changed by the last change.
        package var lastChangedKeys: Set<String>
        /// How many changes have arrived. Each may move what a flag reads though nothing else
        /// here moves: a tester's override changes no snapshot, and flipping the same key back
        /// names the same keys again.
        package var changes: Int

        /// What `client` serves now.
        package init(of client: any FeatureFlagClient) {
            snapshot = client.snapshot
            status = client.status
            isKillSwitchActive = client.isKillSwitchActive
            lastChangedKeys = []
            changes = 0
        }
    }

    /// The state last handed to `update`.
    package private(set) var state: State
    private let client: any FeatureFlagClient
    private let update: @MainActor (State) -> Void
    private let tasks = Locked<[Task<Void, Never>]>([])

    /// Follows `client` until ``stop()`` or until this object goes away; `update` gets each
    /// new state before it becomes ``state``.
    package init(client: any FeatureFlagClient, update: @escaping @MainActor (State) -> Void) {
        self.client = client
        self.update = update
        // Subscribed before the state is read: a change in between is in the state read, or
        // comes on the stream (or both) — never in neither.
        let changes = client.changes()
        let events = client.events()
        state = State(of: client)
        let onChange = Task { [weak self] in
            for await change in changes {
                guard let self else { return }
                var next = self.state
                next.snapshot = change.snapshot
                next.isKillSwitchActive = change.killSwitchActive
                next.lastChangedKeys = change.keys
                next.changes += 1
                next.status = self.client.status
                self.set(next)
            }
        }
        let onEvent = Task { [weak self] in
            for await _ in events {
                guard let self else { return }
                var next = self.state
                next.status = self.client.status
                next.isKillSwitchActive = self.client.isKillSwitchActive
                self.set(next)
            }
        }
        tasks.withLock { $0 = [onChange, onEvent] }
    }

    private func set(_ next: State) {
        guard next != state else { return }
        update(next)
        state = next
    }

    /// Stops following. Idempotent.
    package func stop() {
        for task in tasks.withLock({ $0 }) { task.cancel() }
    }

    deinit {
        for task in tasks.withLock({ $0 }) { task.cancel() }
    }
}
