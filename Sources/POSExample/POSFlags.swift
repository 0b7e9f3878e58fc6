public import FeatureFlags

/// The example app's flags, declared once with their safe defaults.
public enum POSFlags {
    /// The new express checkout (off: the classic one).
    public static let newCheckout = FlagKey("new_checkout", default: false)
    /// The plan's theme colour, `#RRGGBB`.
    public static let themeColor = FlagKey("plan_themeColor", default: "#7F8C8D")
    /// Which version of the orders API to call.
    public static let ordersAPIVersion = FlagKey("pos_orders_api_version", default: 1)
    /// How long the orders API may take, in seconds.
    public static let requestTimeout = FlagKey("pos_request_timeout_seconds", default: 10.0)
    /// How many days receipts are kept on the device.
    public static let receiptRetentionDays = FlagKey("pos_receipt_retention_days", default: 30)
}
