public import FeatureFlags
public import Foundation

/// Values a tester forces on this device over the service's (debug menus, UI tests): source `override`, reason `STATIC`.
/// The kill switch always wins; safe mode ignores them. Persisted in ``fileURL``; release builds pass `allowed: false`.
/// UI tests use ``launchArgument`` or ``launchEnvironmentVariable``. A change reaches every carrying client before returning.
public final class FlagOverrides: FlagOverrideSource {
    /// The most overrides held at once.
    public static let maximumCount = 1_000

    /// Where the overrides are kept between runs; nil when in memory only (no file, forbidden, or launch overrides).
    public let fileURL: URL?
    /// Whether this build allows overrides at all.
    public let isAllowed: Bool
    /// Where this run's overrides came from when a launch argument or variable named them.
    package let launch: Launch?

    /// The launch argument naming one run's overrides: `-FeatureFlagOverrides <path or JSON>` (JSON starts with `{`).
    public static let launchArgument = Launch.argument
    /// The variable naming one run's overrides, `FEATURE_FLAG_OVERRIDES=<path or JSON>`, if the argument is absent.
    public static let launchEnvironmentVariable = Launch.environmentVariable

    private struct State {
        var values: [String: FlagValue]
        /// In registration order (ids rise).
        var observers: [(id: Int, call: @Sendable ([String: FlagValue]) -> Void)] = []
        var nextObserver = 0
        /// Counts the changes made.
        var version = 0
    }

    private let state: Locked<State>
    /// Orders changes for observers; held only while applying one and telling the (never blocking) clients.
    private let changes = Locked(())
    /// Orders file writes outside `changes`: the version last written (a write already covered writes nothing).
    private let writes = Locked(0)
    /// Writes the file (a seam for tests).
    private let writeFile: @Sendable ([UInt8], String) throws(FileIOError) -> Void
    /// What went wrong loading the overrides (an unusable file, a broken launch file).
    public let problems: [String]

    /// Overrides persisted at `fileURL` (nil: memory only), or the launch overrides, unpersisted; `allowed: false` forbids all.
    /// On Apple platforms the file is written with the Data Protection class `protection`.
    public convenience init(
        fileURL: URL? = FlagOverrides.defaultFileURL(), allowed: Bool, readsLaunchOverrides: Bool = true,
        protection: FileProtectionType = .completeUntilFirstUserAuthentication
    ) {
        self.init(fileURL: fileURL, allowed: allowed, launch: readsLaunchOverrides ? Launch.current() : nil, protection: protection)
    }

    /// Overrides persisted at `fileURL`, or exactly `launch`'s for this run.
    package convenience init(
        fileURL: URL?, allowed: Bool, launch: Launch?, protection: FileProtectionType = .completeUntilFirstUserAuthentication,
        protect: @escaping @Sendable (String, FileProtectionType) -> Void = FileIO.protect
    ) {
        self.init(fileURL: fileURL, allowed: allowed, launch: launch) { bytes, path throws(FileIOError) in
            try FileIO.writeAtomically(bytes, to: path, protection: protection, protect: protect)
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

    /// `overrides.json` in the folder of ``LastKnownGoodStore/defaultFileURL(appName:)``.
    public static func defaultFileURL(appName: String = LastKnownGoodStore.defaultAppName) -> URL {
        LastKnownGoodStore.defaultFileURL(appName: appName).deletingLastPathComponent().appendingPathComponent("overrides.json")
    }

    /// Every override now, by flag name.
    public var values: [String: FlagValue] { state.withLock { $0.values } }

    /// The override of `name`, if any.
    public func value(_ name: String) -> FlagValue? { state.withLock { $0.values[name] } }

    /// Forces `name` to `value` until cleared. Throws `GENERAL` if forbidden, over ``maximumCount``, the name is empty,
    /// the file would not read back (over 1 MiB, too deep), or saving failed (the override then holds for this run only).
    public func override(_ name: String, _ value: FlagValue) throws(FlagError) {
        guard !name.isEmpty else { throw .emptyOverrideName }
        let persisted = fileURL != nil
        try change { values throws(FlagError) in
            if values[name] == nil, values.count >= Self.maximumCount { throw .tooManyOverrides(limit: Self.maximumCount) }
            values[name] = value
            if persisted, let problem = OverrideFile.problemReadingBack(values) { throw problem }
        }
    }

    /// Forces `key`'s flag to `value`; throws as ``override(_:_:)``, or `TYPE_MISMATCH` when `value` has no JSON form.
    public func override<Value>(_ key: FlagKey<Value>, _ value: Value) throws(FlagError) {
        guard let encoded = key.flagValue(for: value) else { throw .unencodableOverride(flag: key.name) }
        try override(key.name, encoded)
    }

    /// Removes the override of `name`; throws `GENERAL` when overrides are forbidden or saving failed.
    public func clearOverride(_ name: String) throws(FlagError) {
        try change { values throws(FlagError) in values[name] = nil }
    }

    /// Removes the override of `key`'s flag.
    public func clearOverride<Value>(_ key: FlagKey<Value>) throws(FlagError) {
        try clearOverride(key.name)
    }

    /// Removes every override; throws `GENERAL` when overrides are forbidden or saving failed.
    public func clearAll() throws(FlagError) {
        try change { values throws(FlagError) in values.removeAll() }
    }

    /// Replaces every override with the JSON object at `url`; throws `PARSE_ERROR` for a bad file, or as ``clearAll()``.
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

    /// Applies `body` and tells observers in order; then writes the file outside that order (a slow disk delays no read).
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
                // Compared as one value: FlagValue's equality is the core's, not specialised again here.
                guard FlagValue.object(s.values) != FlagValue.object(next) else { return nil }
                s.values = next
                s.version += 1
                return s.observers.map(\.call)
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

    /// Registers `observer` (called in order on the changing thread); returns its id and the overrides now, atomically.
    public func attach(_ observer: @escaping @Sendable ([String: FlagValue]) -> Void) -> (id: Int, values: [String: FlagValue]) {
        state.withLock { s in
            let id = s.nextObserver
            s.nextObserver += 1
            s.observers.append((id, observer))
            return (id, s.values)
        }
    }

    /// Runs `body` with the overrides now, holding off changes until it returns.
    public func whileUnchanged(_ body: ([String: FlagValue]) -> Void) {
        changes.withLock { _ in body(state.withLock { $0.values }) }
    }

    /// Unregisters the observer `id`.
    public func detach(_ id: Int) {
        state.withLock { $0.observers.removeAll { $0.id == id } }
    }

    /// How many clients are attached now (tests).
    package var observerCount: Int { state.withLock { $0.observers.count } }

    /// The persisted overrides at `url`; a missing file is none, an unusable one is set aside and reported.
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
    /// Overrides named at launch (how UI tests set flags); the argument wins, and a value starting with `{` is JSON.
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

        /// The overrides named by `arguments`, else by `environment`; nil when neither names any.
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
