package import Foundation

/// A fresh directory under the system temp dir, removed when released.
package final class TempDir: Sendable {
    package let path: String

    package init() {
        var template = Array((NSTemporaryDirectory() + "/ff-test-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        path = made.map { String(cString: $0) } ?? NSTemporaryDirectory() + "/ff-test-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    package func url(_ name: String) -> URL { URL(fileURLWithPath: path).appendingPathComponent(name) }

    package func files() -> [String] { (try? FileManager.default.contentsOfDirectory(atPath: path))?.sorted() ?? [] }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// Runs CPU- or disk-heavy test work on a thread of its own, so it does not occupy one of
/// the few threads of Swift's global executor that the timing-sensitive loopback tests need
/// (one per core: two here). Not `DispatchQueue.global()`: on Linux its worker threads are
/// the very pool the global executor runs on.
package func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
