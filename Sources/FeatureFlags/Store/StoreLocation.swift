import Foundation

/// Where the default files live: the platform's base directory, a folder per app, and the
/// move of version 0.3.0's shared default into an app's own folder. Pure decisions with the
/// file system as input, so that Linux tests cover what Apple builds do.
enum StoreLocation {
    /// The folder of version 0.3.0's default file, shared by every app of a user.
    static let legacyFolder = "FeatureFlags"

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

    /// Whether this process runs in a sandbox container of its own: always on iOS, tvOS,
    /// watchOS and visionOS; on a Mac when App Sandbox is on; never on Linux.
    static var isSandboxed: Bool {
        #if os(iOS) || os(tvOS) || os(watchOS) || os(visionOS)
        return true
        #elseif os(macOS)
        return ProcessInfo.processInfo.environment["APP_SANDBOX_CONTAINER_ID"] != nil
        #else
        return false
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

    /// What a store opening `file` does first: when `file` is the app's default file in `base`,
    /// ``adoptLegacyFile(in:to:sandboxed:)``. Returns whether a file moved.
    @discardableResult
    static func adoptLegacyFile(ifOpening file: URL, in base: URL, appName: String, sandboxed: Bool) -> Bool {
        let standard = self.file(in: base, appName: appName)
        guard file.standardizedFileURL.path == standard.standardizedFileURL.path else { return false }
        return adoptLegacyFile(in: base, to: standard, sandboxed: sandboxed)
    }

    /// Moves version 0.3.0's default file (`<base>/FeatureFlags/flags.lkg`) to `file` when the
    /// process is `sandboxed` (the old folder is then this app's own), `file` does not exist yet
    /// and the old one does. Returns whether it moved. Never overwrites; failures leave both as
    /// they were (the app then starts without a Last-Known-Good, as on a first launch).
    @discardableResult
    static func adoptLegacyFile(in base: URL, to file: URL, sandboxed: Bool) -> Bool {
        let legacy = base.appendingPathComponent(legacyFolder, isDirectory: true).appendingPathComponent("flags.lkg")
        guard sandboxed, legacy.path != file.path else { return false }
        let files = FileManager.default
        guard files.fileExists(atPath: legacy.path), !files.fileExists(atPath: file.path) else { return false }
        do {
            try files.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try files.moveItem(at: legacy, to: file)
            return true
        } catch {
            return false
        }
    }
}
