#if canImport(Observation)
public import Observation

/// An `@Observable` view of any ``FeatureFlagClient`` for SwiftUI: views that read flags
/// through it re-render when the values, the status or the kill switch change.
///
/// ```swift
/// @State var flags = ObservableFlags(client: provider)
/// var body: some View {
///     if flags.value(.newCheckout) { NewCheckout() } else { Checkout() }
/// }
/// ```
///
/// Updates arrive on the main actor. Works on Linux too (Observation ships with the toolchain).
@available(iOS 17, macOS 14, tvOS 17, watchOS 10, *)
@MainActor
@Observable
public final class ObservableFlags {
    /// The snapshot served now.
    public private(set) var snapshot: FlagSnapshot
    /// The client's status now.
    public private(set) var status: ProviderStatus
    /// Whether the kill switch is on: dim or hide navigation while it is ("limited mode").
    public private(set) var isKillSwitchActive: Bool
    /// The keys changed by the last update.
    public private(set) var lastChangedKeys: Set<String> = []

    @ObservationIgnored private let client: any FeatureFlagClient
    @ObservationIgnored private let tasks = Locked<[Task<Void, Never>]>([])

    /// Observes `client` until ``stop()`` or until this object goes away.
    public init(client: any FeatureFlagClient) {
        self.client = client
        snapshot = client.snapshot
        status = client.status
        isKillSwitchActive = client.isKillSwitchActive
        let changes = client.changes()
        let events = client.events()
        let onChange = Task { [weak self] in
            for await change in changes {
                guard let self else { return }
                self.apply(change)
            }
        }
        let onEvent = Task { [weak self] in
            for await _ in events {
                guard let self else { return }
                self.refreshStatus()
            }
        }
        tasks.withLock { $0 = [onChange, onEvent] }
    }

    /// The flag's value; reading it makes the caller observe this object's snapshot.
    public func value<Value>(_ key: FlagKey<Value>) -> Value {
        _ = snapshot
        _ = isKillSwitchActive
        return client.value(key)
    }

    /// The value with its explanation, observed like ``value(_:)``.
    public func details<Value>(_ key: FlagKey<Value>) -> FlagDetails<Value> {
        _ = snapshot
        _ = isKillSwitchActive
        return client.details(key)
    }

    /// Stops observing. Idempotent.
    public func stop() {
        for task in tasks.withLock({ $0 }) { task.cancel() }
    }

    private func apply(_ change: FlagChange) {
        snapshot = change.snapshot
        isKillSwitchActive = change.killSwitchActive
        lastChangedKeys = change.keys
        refreshStatus()
    }

    private func refreshStatus() {
        let now = client.status
        if now != status { status = now }
        let killed = client.isKillSwitchActive
        if killed != isKillSwitchActive { isKillSwitchActive = killed }
    }

    deinit {
        for task in tasks.withLock({ $0 }) { task.cancel() }
    }
}
#endif
