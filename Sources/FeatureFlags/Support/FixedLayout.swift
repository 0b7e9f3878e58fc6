package import Foundation

// `Date` and `URL` are resilient on Apple platforms: a value type storing one loses its fixed layout, bloating code.
// Package value types therefore store dates as seconds since the reference date and URLs via `URLReference`.

/// A URL held by reference, keeping its holder's layout fixed; equal and hashed as the URL.
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
