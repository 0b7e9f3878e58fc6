public import FeatureFlags

/// A flag key with its type erased, so that keys of any type can be declared together to a
/// ``FlagInspector`` (`[.newCheckout, .tipPercent, .theme]`). ``FlagKey`` conforms.
public protocol InspectableKey: Sendable {
    /// The flag's name.
    var name: String { get }
    /// The type reads of the key ask for.
    var valueType: FlagValueType { get }
    /// The key's default as JSON; nil when its conversion cannot write it.
    var defaultFlagValue: FlagValue? { get }
    /// Whether a read of the key accepts `value` (false: the read returns the default with
    /// TYPE_MISMATCH).
    func accepts(_ value: FlagValue) -> Bool
}

/// The members live with ``FlagKey`` in the core library.
extension FlagKey: InspectableKey {}
