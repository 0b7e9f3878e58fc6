#if canImport(Combine)
public import FeatureFlags
public import Combine

/// An `ObservableObject` view of any ``FeatureFlagClient`` for SwiftUI on iOS 16 and macOS 13
/// (on iOS 17 and later, ``ObservableFlags`` does the same with Observation): views that hold
/// it as `@StateObject` or `@ObservedObject` re-render when the values, the status or the
/// kill switch change.
///
/// ```swift
/// @StateObject var flags = ObservableFlagsObject(client: provider)
/// var body: some View {
///     if flags.value(.newCheckout) { NewCheckout() } else { Checkout() }
/// }
/// ```
///
/// Updates arrive on the main actor; `objectWillChange` fires once per update, before it.
/// Only where Combine exists (Apple platforms): the following itself is shared with
/// ``ObservableFlags`` and tested on every platform.
@MainActor
public final class ObservableFlagsObject: ObservableObject {
    /// The snapshot served now.
    public var snapshot: FlagSnapshot { state.snapshot }
    /// The client's status now.
    public var status: ProviderStatus { state.status }
    /// Whether the kill switch is on: dim or hide navigation while it is ("limited mode").
    public var isKillSwitchActive: Bool { state.isKillSwitchActive }
    /// The keys changed by the last update.
    public var lastChangedKeys: Set<String> { state.lastChangedKeys }

    private var state: FlagFollower.State
    private let client: any FeatureFlagClient
    private var follower: FlagFollower?

    /// Observes `client` until ``stop()`` or until this object goes away.
    public init(client: any FeatureFlagClient) {
        self.client = client
        state = FlagFollower.State(of: client)
        let follower = FlagFollower(client: client) { [weak self] next in
            self?.objectWillChange.send()
            self?.state = next
        }
        self.follower = follower
        // The follower read the client after subscribing: what changed since the read above.
        state = follower.state
    }

    /// The flag's value now.
    public func value<Value>(_ key: FlagKey<Value>) -> Value { client.value(key) }

    /// The value with its explanation.
    public func details<Value>(_ key: FlagKey<Value>) -> FlagDetails<Value> { client.details(key) }

    /// Stops observing. Idempotent.
    public func stop() { follower?.stop() }
}
#endif
