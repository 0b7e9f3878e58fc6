public import Foundation

/// Values a tester forces on this device, over whatever the flag service says: the layer
/// behind a debug menu's flag toggles and behind UI tests. Any client of the package can carry
/// one (``FeatureFlagProvider/Configuration/overrides``, ``FallbackClient``'s `overrides:`),
/// and several clients can share one.
///
/// ```swift
/// let overrides = FlagOverrides(allowed: BuildSettings.allowsFlagOverrides)
/// let provider = FeatureFlagProvider(context: user, fetcher: fetcher, store: store,
///                                    configuration: .init(overrides: overrides))
/// try overrides.override(.newCheckout, true)    // source "override", survives relaunch
/// ```
///
/// - An overridden flag reads the override's value with source `override` and reason `STATIC`
///   in ``FeatureFlagClient/details(_:)``; a value of the wrong type reads the key's default
///   with `TYPE_MISMATCH`.
/// - **The kill switch always wins**: while it is on, overridden flags read their safe
///   defaults like every other flag, and the kill-switch flag itself cannot be overridden. A
///   provider in safe mode (``CrashLoopGuard``) ignores overrides until it leaves safe mode:
///   an override may be what crashed the app.
/// - Overrides are written to their own file (``fileURL``, beside the Last-Known-Good by
///   default), so a tester's choices survive a relaunch; the flag service's values are never
///   changed, and clearing an override brings them back at once.
/// - A release build forbids them: pass `allowed: false` (from a build setting, see
///   Docs/Testing.md). Then the file is never read, nothing can be set, and reads are exactly
///   the service's.
/// - For UI tests, a launch argument or environment variable names a JSON file (or holds the
///   JSON itself) whose overrides decide that run: `-FeatureFlagOverrides <path or JSON>`
///   (``launchArgument``) or `FEATURE_FLAG_OVERRIDES=<path or JSON>`
///   (``launchEnvironmentVariable``); the argument wins.
///
/// Changes apply to every client carrying the overrides before the call returns.
public final class FlagOverrides: Sendable {
    /// The most overrides held at once.
    public static let maximumCount = 1_000

    /// Where the overrides are kept between runs; nil when they live in memory only (no file
    /// given, overrides forbidden, or a launch file decides this run).
    public let fileURL: URL?
    /// Whether this build allows overrides at all.
    public let isAllowed: Bool
    /// Where this run's overrides came from when a launch argument or variable named them.
    package let launch: Launch?

    /// The launch argument that names overrides for one run: `-FeatureFlagOverrides <path or
    /// JSON>`. A value starting with `{` is the JSON itself (for devices, where the test's
    /// files are out of the app's reach); anything else is a path.
    public static let launchArgument = Launch.argument
    /// The environment variable that names overrides for one run:
    /// `FEATURE_FLAG_OVERRIDES=<path or JSON>` (read when the launch argument is absent).
    public static let launchEnvironmentVariable = Launch.environmentVariable

    private struct State {
        var values: [String: FlagValue]
        var observers: [Int: @Sendable ([String: FlagValue]) -> Void] = [:]
        var nextObserver = 0
        /// Counts the changes made.
        var version = 0
    }

    private let state: Locked<State>
    /// Orders changes, so observers see them in the order they were made. Held only while a
    /// change is applied and the clients (the library's own, which never block) are told.
    private let changes = Locked(())
    /// Orders the file's writes, outside `changes`: the version last written. A write takes
    /// the newest values; one whose change a later write already covered writes nothing.
    private let writes = Locked(0)
    /// Writes the file (a seam for tests).
    private let writeFile: @Sendable ([UInt8], String) throws(FileIOError) -> Void
    /// What went wrong loading the overrides (an unusable file, a broken launch file).
    public let problems: [String]

    /// Overrides persisted at `fileURL`, or — when the process was launched with overrides
    /// (``launchArgument``, ``launchEnvironmentVariable``) — exactly those for this run (not
    /// persisted: a UI test never changes a tester's file).
    /// - Parameters:
    ///   - fileURL: where overrides are kept between runs (nil: memory only). Default: beside
    ///     the Last-Known-Good store's default file.
    ///   - allowed: false forbids overrides entirely: nothing is read or set.
    ///   - readsLaunchOverrides: false ignores the launch argument and variable.
    public convenience init(
        fileURL: URL? = FlagOverrides.defaultFileURL(), allowed: Bool, readsLaunchOverrides: Bool = true
    ) {
        self.init(fileURL: fileURL, allowed: allowed, launch: readsLaunchOverrides ? Launch.current() : nil)
    }

    /// Overrides persisted at `fileURL`, or exactly `launch`'s for this run.
    package convenience init(fileURL: URL?, allowed: Bool, launch: Launch?) {
        self.init(fileURL: fileURL, allowed: allowed, launch: launch) { bytes, path throws(FileIOError) in
            try FileIO.writeAtomically(bytes, to: path)
        }
    }

    /// The designated initialiser, with the file writer as a seam for tests.
    init(
        fileURL: URL?, allowed: Bool, launch: Launch?,
        write: @escaping @Sendable ([UInt8], String) throws(FileIOError) -> Void
    ) {
        writeFile = write
        isAllowed = allowed
        self.launch = launch
        var problems: [String] = []
        var values: [String: FlagValue] = [:]
        var persistedAt: URL? = nil
        if !allowed {
            if let launch { problems.append("overrides are not allowed in this build; \(launch) was ignored") }
        } else if let launch {
            switch launch.load() {
            case .success(let loaded): values = loaded
            case .failure(let problem): problems.append("\(launch) unusable, no overrides this run: \(problem.reason)")
            }
        } else if let fileURL {
            persistedAt = fileURL
            let (loaded, problem) = Self.loadPersisted(fileURL)
            values = loaded
            if let problem { problems.append(problem) }
        }
        self.fileURL = persistedAt
        self.problems = problems
        state = Locked(State(values: values))
    }

    /// `overrides.json` in the folder of ``LastKnownGoodStore/defaultFileURL(appName:)``: one
    /// per app.
    public static func defaultFileURL(appName: String = LastKnownGoodStore.defaultAppName) -> URL {
        LastKnownGoodStore.defaultFileURL(appName: appName).deletingLastPathComponent().appendingPathComponent("overrides.json")
    }

    // MARK: Reading

    /// Every override now, by flag name.
    public var values: [String: FlagValue] { state.withLock { $0.values } }

    /// The override of `name`, if any.
    public func value(_ name: String) -> FlagValue? { state.withLock { $0.values[name] } }

    // MARK: Changing

    /// Forces `name` to `value` on this device until cleared.
    /// - Throws: ``FlagError`` with `GENERAL`: in a build that forbids overrides (nothing
    ///   changes), for too many overrides (``maximumCount``) or an empty name, for a value the
    ///   overrides file could not read back at the next launch (larger than 1 MiB with the
    ///   others, or nested about 64 levels deep: nothing changes), or when the override is in
    ///   effect but could not be written ("override in effect for this run only; saving it
    ///   failed: …").
    public func override(_ name: String, _ value: FlagValue) throws(FlagError) {
        guard !name.isEmpty else { throw .emptyOverrideName }
        let persisted = fileURL != nil
        try change { values throws(FlagError) in
            if values[name] == nil, values.count >= Self.maximumCount { throw .tooManyOverrides(limit: Self.maximumCount) }
            values[name] = value
            // A file the next launch refuses would lose every override in it (clearing can only
            // keep it readable).
            if persisted, let problem = OverrideFile.problemReadingBack(values) { throw problem }
        }
    }

    /// Forces `key`'s flag to `value` (as the key writes it in JSON) on this device until cleared.
    /// - Throws: as ``override(_:_:)``, and ``FlagError`` with `TYPE_MISMATCH` when the
    ///   key's conversion cannot write `value`.
    public func override<Value>(_ key: FlagKey<Value>, _ value: Value) throws(FlagError) {
        guard let encoded = key.flagValue(for: value) else { throw .unencodableOverride(flag: key.name) }
        try override(key.name, encoded)
    }

    /// Removes the override of `name`: the flag reads the service's value again.
    /// - Throws: ``FlagError`` with `GENERAL` when overrides are forbidden or the change
    ///   could not be written.
    public func clearOverride(_ name: String) throws(FlagError) {
        try change { values throws(FlagError) in values[name] = nil }
    }

    /// Removes the override of `key`'s flag.
    public func clearOverride<Value>(_ key: FlagKey<Value>) throws(FlagError) {
        try clearOverride(key.name)
    }

    /// Removes every override.
    /// - Throws: ``FlagError`` with `GENERAL` when overrides are forbidden or the change
    ///   could not be written.
    public func clearAll() throws(FlagError) {
        try change { values throws(FlagError) in values.removeAll() }
    }

    /// Replaces every override with those in the JSON file at `url` (a flag-name-to-value
    /// object) — a debug menu's "load preset".
    /// - Throws: ``FlagError`` with `PARSE_ERROR` naming what is wrong with the file
    ///   (nothing changes then); with `GENERAL` when the overrides file could not read back what
    ///   it would be written as (nothing changes); or as ``clearAll()``.
    public func load(contentsOf url: URL) throws(FlagError) {
        guard isAllowed else { throw .overridesForbidden }
        let loaded: [String: FlagValue]
        switch Launch.file(url).load() {
        case .success(let values): loaded = values
        case .failure(let problem): throw .unusableOverrideFile("\(url.fileSystemPath) unusable: \(problem.reason)")
        }
        // Written again compactly, a file may still grow (`1e9` is written `1000000000.0`).
        let persisted = fileURL != nil
        try change { values throws(FlagError) in
            if persisted, let problem = OverrideFile.problemReadingBack(loaded) { throw problem }
            values = loaded
        }
    }

    /// Applies `body` to the values and tells the observers, in the order changes are made;
    /// then, outside that order, writes the file with the newest values (a slow disk holds up
    /// only the next write, never a change or a read).
    private func change(_ body: (inout [String: FlagValue]) throws(FlagError) -> Void) throws(FlagError) {
        guard isAllowed else { throw .overridesForbidden }
        let applied: Result<Bool, FlagError> = changes.withLock { _ in
            var next = state.withLock { $0.values }
            do throws(FlagError) {
                try body(&next)
            } catch {
                return .failure(error)
            }
            let observers: [@Sendable ([String: FlagValue]) -> Void]? = state.withLock { s in
                guard s.values != next else { return nil }
                s.values = next
                s.version += 1
                return s.observers.keys.sorted().compactMap { s.observers[$0] }
            }
            guard let observers else { return .success(false) }
            for observer in observers { observer(next) }
            return .success(true)
        }
        guard try applied.get(), let fileURL else { return }
        let path = fileURL.fileSystemPath
        let failure = writes.withLock { written -> FlagError? in
            let (version, values) = state.withLock { ($0.version, $0.values) }
            guard version > written else { return nil }
            do throws(FileIOError) {
                try writeFile(OverrideFile.encode(values), path)
                written = version
                return nil
            } catch {
                return .overrideNotSaved("\(path): \(error.description)")
            }
        }
        if let failure { throw failure }
    }

    // MARK: Clients

    /// Registers a client's `observer`, called with every new set of overrides (on the
    /// changing thread, in order); returns its id and the overrides now, atomically.
    package func attach(_ observer: @escaping @Sendable ([String: FlagValue]) -> Void) -> (id: Int, values: [String: FlagValue]) {
        state.withLock { s in
            let id = s.nextObserver
            s.nextObserver += 1
            s.observers[id] = observer
            return (id, s.values)
        }
    }

    /// Runs `body` with the overrides now, holding off changes until it returns.
    package func whileUnchanged(_ body: ([String: FlagValue]) -> Void) {
        changes.withLock { _ in body(state.withLock { $0.values }) }
    }

    /// Unregisters the observer `id`.
    package func detach(_ id: Int) {
        state.withLock { _ = $0.observers.removeValue(forKey: id) }
    }

    /// How many clients are attached now (tests).
    package var observerCount: Int { state.withLock { $0.observers.count } }

    // MARK: Loading

    /// The persisted overrides at `url`; a missing file is none, an unusable one is set aside
    /// (never overwritten) and reported.
    private static func loadPersisted(_ url: URL) -> ([String: FlagValue], String?) {
        let path = url.fileSystemPath
        let bytes: [UInt8]
        do {
            bytes = try FileIO.read(path)
        } catch .notFound {
            return ([:], nil)
        } catch {
            return ([:], "overrides file \(path) unreadable: \(error.description)")
        }
        switch OverrideFile.decode(bytes) {
        case .success(let values):
            return (values, nil)
        case .failure(let problem):
            let aside = FileIO.quarantinePath(for: path)
            do {
                try FileIO.move(path, to: aside)
                return ([:], "overrides file \(path) unusable (\(problem.reason)); kept at \(aside)")
            } catch {
                return ([:], "overrides file \(path) unusable (\(problem.reason)); setting it aside failed: \(error.description)")
            }
        }
    }
}

extension FlagOverrides {
    /// Overrides named when the process was launched — how a UI test sets flags in the app it
    /// launches, without touching the tester's persisted overrides:
    ///
    /// ```swift
    /// app.launchArguments += ["-FeatureFlagOverrides", fixtureURL.path]        // a file
    /// app.launchEnvironment["FEATURE_FLAG_OVERRIDES"] = #"{"new_checkout": true}"#  // inline
    /// ```
    ///
    /// The argument wins over the variable. A value starting with `{` is the JSON itself (for
    /// devices, where the test's files are out of the app's reach); anything else is a path.
    package enum Launch: Sendable, Equatable, CustomStringConvertible {
        /// A JSON file of flag names to values (held by reference: `Support/FixedLayout.swift`).
        case path(URLReference)
        /// The JSON text itself.
        case json(String)

        /// A JSON file of flag names to values.
        package static func file(_ url: URL) -> Launch { .path(URLReference(url)) }

        /// The launch argument that names overrides: `-FeatureFlagOverrides <path or JSON>`.
        package static let argument = "-FeatureFlagOverrides"
        /// The environment variable that names overrides: `FEATURE_FLAG_OVERRIDES=<path or JSON>`.
        package static let environmentVariable = "FEATURE_FLAG_OVERRIDES"

        /// The overrides named by `arguments` (``argument`` followed by a value) or, failing
        /// that, by `environment` (``environmentVariable``); nil when neither names any.
        package static func current(
            arguments: [String] = ProcessInfo.processInfo.arguments,
            environment: [String: String] = ProcessInfo.processInfo.environment
        ) -> Launch? {
            if let index = arguments.firstIndex(of: argument), index + 1 < arguments.count {
                return parse(arguments[index + 1])
            }
            return environment[environmentVariable].flatMap(parse)
        }

        private static func parse(_ text: String) -> Launch? {
            let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
            if trimmed.isEmpty { return nil }
            if trimmed.hasPrefix("{") { return .json(trimmed) }
            return .file(URL(fileURLWithPath: trimmed))
        }

        /// Where the overrides come from, for messages (never the JSON's values).
        package var description: String {
            switch self {
            case .path(let file): return "launch overrides file \(file.url.fileSystemPath)"
            case .json(let text): return "launch overrides JSON (\(text.utf8.count) bytes)"
            }
        }

        func load() -> Result<[String: FlagValue], OverrideFileProblem> {
            switch self {
            case .path(let file):
                do {
                    return OverrideFile.decode(try FileIO.read(file.url.fileSystemPath))
                } catch {
                    return .failure(OverrideFileProblem(error.description))
                }
            case .json(let text):
                return OverrideFile.decode(Array(text.utf8))
            }
        }
    }
}
