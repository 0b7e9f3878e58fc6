package import Foundation

extension URL {
    /// The file-system path; `path(percentEncoded: false)` is far cheaper than `path` on first call (at launch).
    package var fileSystemPath: String { path(percentEncoded: false) }
}
