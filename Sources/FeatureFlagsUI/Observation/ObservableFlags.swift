#if canImport(Observation)
public import FeatureFlags
public import Observation

/// An `@Observable` view of any ``FeatureFlagClient`` for SwiftUI on iOS 17, macOS 14 and
/// later (and Linux): views that read flags through it re-render when the values, the status
/// or the kill switch change. On iOS 16 use ``ObservableFlagsObject``.
///
/// ```swift
/// @State var flags = ObservableFlags(client: provider)
/// var body: some View {
///     if flags.value(.newCheckout) { NewCheckout() } else { Checkout() }
/// }
/// ```
///
/// Updates arrive on the main actor.
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
    /// How many value changes have arrived: what ``value(_:)`` observes besides the snapshot,
    /// since an override changes what a flag reads without changing the snapshot.
    private var changes = 0

    @ObservationIgnored private let client: any FeatureFlagClient
    @ObservationIgnored private var follower: FlagFollower?

    /// Observes `client` until ``stop()`` or until this object goes away.
    public init(client: any FeatureFlagClient) {
        self.client = client
        snapshot = client.snapshot
        status = client.status
        isKillSwitchActive = client.isKillSwitchActive
        let follower = FlagFollower(client: client) { [weak self] state in self?.show(state) }
        self.follower = follower
        // The follower read the client after subscribing: what changed since the reads above.
        show(follower.state)
    }

    /// Takes `state`'s values — only those that moved, so that views observing one property are
    /// not invalidated by another.
    private func show(_ state: FlagFollower.State) {
        if snapshot != state.snapshot { snapshot = state.snapshot }
        if status != state.status { status = state.status }
        if isKillSwitchActive != state.isKillSwitchActive { isKillSwitchActive = state.isKillSwitchActive }
        if lastChangedKeys != state.lastChangedKeys { lastChangedKeys = state.lastChangedKeys }
        if changes != state.changes { changes = state.changes }
    }

    /// The flag's value; reading it makes the caller observe every change of what flags read
    /// (the snapshot, the kill switch, the overrides).
    public func value<Value>(_ key: FlagKey<Value>) -> Value {
        _ = changes
        _ = snapshot
        _ = isKillSwitchActive
        return client.value(key)
    }

    /// The value with its explanation, observed like ``value(_:)`` and also when the status
    /// moves (an explanation's reason reads `STALE` or `CACHED` with it).
    public func details<Value>(_ key: FlagKey<Value>) -> FlagDetails<Value> {
        _ = changes
        _ = snapshot
        _ = isKillSwitchActive
        _ = status
        return client.details(key)
    }

    /// Stops observing. Idempotent.
    public func stop() { follower?.stop() }
}
#endif
