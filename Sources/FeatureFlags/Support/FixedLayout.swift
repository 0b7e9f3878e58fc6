package import Foundation

// Foundation's `Date` and `URL` are resilient on Apple platforms: their size is known only at
// run time. A value type that stores one has no fixed layout either, and neither has anything
// that stores that type — every copy, move and destroy of them then goes through runtime value
// witnesses, which multiplies the machine code of every function that handles them (on Linux,
// where Foundation is not resilient, none of this shows). The package's value types therefore
// store a date as seconds (`TimeInterval` since the reference date) and a URL by reference
// (`URLReference`), and give the `Date` or `URL` back from a computed property.

/// A URL held by reference, so that the value type holding it keeps a fixed layout. Equal and
/// hashed as the URL it holds.
package struct URLReference: Hashable, Sendable {
    private final class Box: Sendable {
        let url: URL
        init(_ url: URL) { self.url = url }
    }

    private let box: Box

    /// The URL.
    package var url: URL { box.url }

    /// Holds `url`.
    package init(_ url: URL) { box = Box(url) }

    /// Equal when the URLs are.
    package static func == (a: URLReference, b: URLReference) -> Bool { a.box === b.box || a.box.url == b.box.url }

    /// Hashes the URL.
    package func hash(into hasher: inout Hasher) { hasher.combine(box.url) }
}
