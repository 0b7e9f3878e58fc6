/// An entity tag (`ETag`) a flag service sent with its flags, and which endpoint of the
/// fetcher's chain sent it: a conditional request (`If-None-Match`) goes only to that endpoint,
/// since another service's tags mean nothing to it. The Last-Known-Good store keeps it beside
/// the snapshot it validates.
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
