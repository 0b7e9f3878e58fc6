import FeatureFlags
import Foundation

/// The temporary directories the running command made, so that it removes them whether it
/// ends by its own `defer` or because its output pipe closed (``FlagCtl/main()`` removes any
/// left). A signal that ends the process by its default action (Ctrl-C during `demo`) does not.
enum TemporaryDirectories {
    private static let made = Locked<Set<String>>([])

    /// A fresh directory under the system's temporary directory (`$TMPDIR`), registered.
    static func make(_ prefix: String) -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        made.withLock { _ = $0.insert(url.path) }
        return url
    }

    /// Removes `url` (made by ``make(_:)``) and forgets it.
    static func remove(_ url: URL) {
        made.withLock { _ = $0.remove(url.path) }
        try? FileManager.default.removeItem(at: url)
    }

    /// Whether no directory is registered.
    static var isEmpty: Bool { made.withLock { $0.isEmpty } }

    /// Removes every directory still registered: the process is about to end.
    static func removeAll() {
        let paths = made.withLock { paths -> Set<String> in
            defer { paths.removeAll() }
            return paths
        }
        for path in paths { try? FileManager.default.removeItem(atPath: path) }
    }
}
