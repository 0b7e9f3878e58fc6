import Foundation

/// Where the default files live: the platform's base directory and a folder per app.
enum StoreLocation {
    /// The platform's base directory for the default files.
    static func base() -> URL {
        #if canImport(Darwin)
        #if os(tvOS)
        // tvOS offers no persistent local storage to apps: Caches is writable, and purgeable.
        let directory = FileManager.SearchPathDirectory.cachesDirectory
        #else
        let directory = FileManager.SearchPathDirectory.applicationSupportDirectory
        #endif
        return FileManager.default.urls(for: directory, in: .userDomainMask).first ?? FileManager.default.temporaryDirectory
        #else
        let environment = ProcessInfo.processInfo.environment
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            return URL(fileURLWithPath: state, isDirectory: true)
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".local/state", isDirectory: true)
        #endif
    }

    /// `name` usable as one folder: path separators and leading dots replaced, never empty.
    static func folderName(_ name: String) -> String {
        var safe = String(name.map { $0 == "/" || $0 == "\\" || $0 == "\0" ? "_" : $0 })
        while safe.hasPrefix(".") { safe = "_" + safe.dropFirst() }
        return safe.isEmpty ? "app" : safe
    }

    /// `<base>/<appName>/flags.lkg`.
    static func file(in base: URL, appName: String) -> URL {
        base.appendingPathComponent(folderName(appName), isDirectory: true).appendingPathComponent("flags.lkg")
    }
}
