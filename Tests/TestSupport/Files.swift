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
/// the very pool the global executor runs on. The work stays in the calling test's task (a
/// task executor preference), so an `#expect` inside it is recorded against that test — from a
/// bare thread, Swift Testing could only attribute it to an unknown test.
package func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    if #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *) {
        return try await withTaskExecutorPreference(OwnThreadExecutor.shared) {
            // Setting the preference moves nothing by itself: the task goes on where it runs
            // until it is next enqueued. One yield enqueues it, on the preferred executor.
            await Task.yield()
            return try body()
        }
    }
    return try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// Runs each job given to it on a new thread of its own: the executor ``blocking(_:)``
/// prefers for its work (a few jobs per call there: the hop onto it, the work, the hop back).
@available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
package final class OwnThreadExecutor: TaskExecutor {
    package static let shared = OwnThreadExecutor()

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        Thread { job.runSynchronously(on: executor) }.start()
    }
}

/// The package's built executable `name` (`flagctl`, `flag-stress`), found beside the test
/// bundle on Apple platforms (tests run inside `xctest` there) and beside the test executable
/// elsewhere; nil if it was not built.
package func builtProduct(_ name: String) -> URL? {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    #if canImport(Darwin)
    if let bundle = Bundle.allBundles.first(where: { $0.bundlePath.hasSuffix(".xctest") }) {
        directory = bundle.bundleURL.deletingLastPathComponent()
    }
    #endif
    let url = directory.appendingPathComponent(name)
    return FileManager.default.isExecutableFile(atPath: url.path) ? url : nil
}
