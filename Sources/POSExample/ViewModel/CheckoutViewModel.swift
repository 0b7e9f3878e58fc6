public import FeatureFlags

/// The view-model module: what the checkout screen shows.
public final class CheckoutViewModel: Sendable {
    /// Which checkout flow to present.
    public enum Flow: Sendable, Equatable {
        /// The flow every venue has.
        case classic
        /// The new flow behind `new_checkout`.
        case express
    }

    private let flags: any FeatureFlagClient

    /// A view-model reading `flags`.
    public init(flags: any FeatureFlagClient) { self.flags = flags }

    /// The flow to present; the kill switch forces the classic one.
    public var flow: Flow { flags.value(POSFlags.newCheckout) ? .express : .classic }

    /// The accent colour.
    public var accentColor: String { flags.value(POSFlags.themeColor) }

    /// Limited mode: the kill switch is on, navigation is dimmed.
    public var isLimitedMode: Bool { flags.isKillSwitchActive }

    /// A line for a debug screen: where the checkout decision came from.
    public var explanation: String {
        let d = flags.details(POSFlags.newCheckout)
        return "new_checkout=\(d.value) source=\(d.source.rawValue) reason=\(d.reason.rawValue)"
    }
}
