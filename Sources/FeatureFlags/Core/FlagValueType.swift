/// The type a read asks for, in OpenFeature's terms.
public enum FlagValueType: String, Sendable, Hashable, CaseIterable {
    /// `Bool`.
    case boolean
    /// `String` (and string-backed enums).
    case string
    /// `Int`.
    case integer
    /// `Double`.
    case double
    /// Anything else: lists, objects, decoded structures.
    case object

    /// The type of reads returning `Value`.
    public init<Value>(_ type: Value.Type) {
        // Metatype identities, not casts: this runs on every hooked read, often unspecialised.
        let id = ObjectIdentifier(type)
        if id == ObjectIdentifier(Bool.self) {
            self = .boolean
        } else if id == ObjectIdentifier(String.self) {
            self = .string
        } else if id == ObjectIdentifier(Int.self) {
            self = .integer
        } else if id == ObjectIdentifier(Double.self) {
            self = .double
        } else {
            self = .object
        }
    }
}
