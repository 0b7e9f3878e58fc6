/// A service's `ETag` and the chain endpoint that sent it; `If-None-Match` goes only to that endpoint.
package struct EntityTag: Sendable, Hashable, CustomStringConvertible {
    /// The tag exactly as the service sent it, quotes and `W/` included.
    package let value: String
    /// The endpoint that sent it: its position in the chain and its name, e.g. `0/ofrep`.
    package let endpoint: String

    /// A tag `value` from `endpoint`.
    package init(_ value: String, endpoint: String) {
        self.value = value
        self.endpoint = endpoint
    }

    /// The tag's value.
    package var description: String { value }
}
