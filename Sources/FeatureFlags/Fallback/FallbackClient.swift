import Foundation

/// Last-Known-Good flags persisted on disk: the client that keeps an app working offline.
///
/// One key-value file holds a snapshot per context (least recently used evicted beyond
/// ``capacity``), in a versioned binary format with checksums, replaced atomically with
/// mode 0600. Bundled defaults lie beneath. Creating the client reads the file
/// synchronously — it is meant to run at launch, before the first frame — and never fails:
/// an unusable file is moved aside to `<file>.corrupt`, the store starts empty, and a
/// ``FlagEvent/fallbackRejected(reason:keptAt:)`` event says why.
///
/// Values served from here report source `fallback` and reason `CACHED`.
public final class FallbackClient: FeatureFlagClient {
    /// The file the snapshots live in.
    public let fileURL: URL
    /// How many contexts the file keeps.
    public let capacity: Int
    /// What loading the file found.
    public let loadOutcome: FallbackLoadOutcome

    private let serving: FlagServing
    private let store: Locked<(store: FallbackStore, current: String?)>

    /// The file's default place: Application Support on Apple platforms,
    /// `$XDG_STATE_HOME` (else `~/.local/state`) on Linux, in a folder named `appName`.
    public static func defaultFileURL(appName: String = "FeatureFlags") -> URL {
        #if canImport(Darwin)
        let base =
            FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        #else
        let environment = ProcessInfo.processInfo.environment
        let base: URL
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            base = URL(fileURLWithPath: state, isDirectory: true)
        } else {
            let home = environment["HOME"] ?? NSHomeDirectory()
            base = URL(fileURLWithPath: home, isDirectory: true).appendingPathComponent(".local/state", isDirectory: true)
        }
        #endif
        return base.appendingPathComponent(appName, isDirectory: true).appendingPathComponent("flags.lkg")
    }

    /// Loads the file and serves the snapshot for `context` — or, when `context` is nil, for
    /// the most recently used context — over `bundledDefaults`.
    /// - Parameters:
    ///   - fileURL: any file path; the directory is created on first write.
    ///   - capacity: contexts kept, least recently used evicted first (at least 1).
    ///   - killSwitchKey: the flag whose `true` forces every read to its safe default.
    ///   - now: the clock used for ages and TTLs.
    public convenience init(
        fileURL: URL = FallbackClient.defaultFileURL(),
        context: EvaluationContext? = nil,
        bundledDefaults: BundledDefaults = .none,
        capacity: Int = 5,
        killSwitchKey: String = "kill_switch",
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.init(
            fileURL: fileURL, context: context, bundledDefaults: bundledDefaults, capacity: capacity,
            killSwitchKey: killSwitchKey, now: now, read: FileIO.read)
    }

    /// The designated initialiser, with the file reader as a seam for tests.
    init(
        fileURL: URL, context: EvaluationContext?, bundledDefaults: BundledDefaults, capacity: Int,
        killSwitchKey: String, now: @escaping @Sendable () -> Date, read: (String) throws(FileIOError) -> [UInt8]
    ) {
        self.fileURL = fileURL
        self.capacity = max(1, capacity)
        var (loaded, outcome) = FallbackStore.load(path: fileURL.path, capacity: self.capacity, read: read)
        var events: [FlagEvent] = []
        switch outcome {
        case .loaded(let contexts, let bytes): events.append(.fallbackLoaded(contexts: contexts, bytes: bytes))
        case .noFile: break
        case .rejected(let reason, let keptAt): events.append(.fallbackRejected(reason: reason, keptAt: keptAt))
        }
        var defaults: [String: FlagEntry] = [:]
        switch bundledDefaults.load() {
        case .success(let entries): defaults = entries
        case .failure(let error): events.append(.error(.parseError, message: error.message))
        }
        let current = context?.fingerprint ?? loaded.fingerprints.first
        var snapshot = FlagSnapshot.empty
        if let current, let found = loaded.snapshot(for: current) {
            switch found {
            case .success(let s):
                snapshot = s
                loaded.touch(current)
            case .failure(let error):
                events.append(.fallbackRejected(reason: "stored snapshot undecodable: \(error.message)", keptAt: nil))
            }
        }
        self.loadOutcome = outcome
        self.store = Locked((loaded, current))
        self.serving = FlagServing(
            snapshot: snapshot, defaults: defaults, status: .ready, reasonOverride: .cached,
            killSwitchKey: killSwitchKey, now: now)
        for event in events { serving.emit(event) }
        if serving.isKillSwitchActive { serving.emit(.killSwitch(active: true)) }
        serving.emit(.ready)
    }

    // MARK: FeatureFlagClient

    /// The raw value of `name` (nil when missing, valueless or killed).
    public func flagValue(_ name: String) -> FlagValue? { serving.lookup(name) }
    /// The value and where it came from (`fallback`, `bundled_defaults`, `code_default`, `kill_switch`).
    public func details<Value>(_ key: FlagKey<Value>) -> FlagDetails<Value> { serving.details(key) }
    /// The snapshot served now (``FlagSnapshot/empty`` when the current context has none).
    public var snapshot: FlagSnapshot { serving.snapshot }
    /// Always `READY` once created: a fallback serves what it has.
    public var status: ProviderStatus { serving.status }
    /// Whether the served snapshot has the kill switch on.
    public var isKillSwitchActive: Bool { serving.isKillSwitchActive }
    /// Changes of served values.
    public func changes() -> AsyncStream<FlagChange> { serving.changeBroadcaster.subscribe() }
    /// Load results, write failures, kill-switch flips and value changes; a new stream first
    /// receives the recent history, so problems found at load are never missed.
    public func events() -> AsyncStream<FlagEvent> { serving.eventBroadcaster.subscribe() }
    /// Reports unknown list members as ``FlagEvent/unknownValues(flag:values:)``, once per
    /// flag until its values change.
    public func noteUnknownValues(_ values: [String], in flag: String) { serving.noteUnknownValues(values, in: flag) }

    /// The flag whose `true` forces every read to its safe default.
    public var killSwitchKey: String { serving.killSwitchKey }

    /// The bundled defaults beneath every snapshot.
    package var bundledDefaults: [String: FlagEntry] { serving.defaults }

    /// The most recent events (up to 32), oldest first: for debug screens and diagnostics.
    public var recentEvents: [FlagEvent] { serving.eventBroadcaster.history }

    // MARK: Store

    /// The fingerprint of the context being served, if any.
    public var currentContextFingerprint: String? { store.withLock { $0.current } }

    /// Fingerprints of the stored contexts, most recently used first.
    public var storedContextFingerprints: [String] { store.withLock { $0.store.fingerprints } }

    /// The stored snapshot for `context`, if any.
    public func storedSnapshot(for context: EvaluationContext) -> FlagSnapshot? {
        let found = store.withLock { $0.store.snapshot(for: context.fingerprint) }
        if case .success(let snapshot)? = found { return snapshot }
        return nil
    }

    /// Serves `context`'s Last-Known-Good from now on, or — when it has none — the bundled
    /// and code defaults, never another context's values. No disk I/O; the new order of use is
    /// written with the next ``save(_:for:)``.
    @discardableResult
    public func select(_ context: EvaluationContext) -> FlagSnapshot? {
        let fingerprint = context.fingerprint
        let found = store.withLock { s -> Result<FlagSnapshot, ByteDecodingError>? in
            s.current = fingerprint
            let found = s.store.snapshot(for: fingerprint)
            if case .success = found { s.store.touch(fingerprint) }
            return found
        }
        switch found {
        case .success(let snapshot)?:
            serving.activate(snapshot, reasonOverride: .cached)
            return snapshot
        case .failure(let error)?:
            serving.emit(.fallbackRejected(reason: "stored snapshot undecodable: \(error.message)", keptAt: nil))
            serving.activate(.empty, reasonOverride: .cached)
            return nil
        case nil:
            serving.activate(.empty, reasonOverride: .cached)
            return nil
        }
    }

    /// Persists `snapshot` as `context`'s Last-Known-Good (most recently used), evicting the
    /// least recently used context beyond capacity, and serves it if `context` is current.
    /// Blocking file I/O (write, fsync, rename): call it off the main thread.
    /// - Throws: ``FallbackWriteError`` when the file cannot be written; the snapshot is still
    ///   kept in memory for this session, and an event reports the failure.
    public func save(_ snapshot: FlagSnapshot, for context: EvaluationContext) throws(FallbackWriteError) {
        let stored = FlagSnapshot(
            flags: snapshot.flags, version: snapshot.version, fetchedAt: snapshot.fetchedAt, ttl: snapshot.ttl,
            etag: snapshot.etag, origin: .fallback, contextFingerprint: context.fingerprint)
        let payload = SnapshotCodec.encode(stored)
        let (isCurrent, failure) = store.withLock { s -> (Bool, FileIOError?) in
            do throws(FileIOError) {
                try s.store.commit { $0.put(payload: payload, snapshot: stored, for: context.fingerprint) }
                return (s.current == context.fingerprint, nil)
            } catch {
                return (s.current == context.fingerprint, error)
            }
        }
        if isCurrent { serving.activate(stored, reasonOverride: .cached) }
        if let failure {
            let error = FallbackWriteError(reason: failure.description)
            serving.emit(.fallbackWriteFailed(reason: error.reason))
            throw error
        }
    }

    /// Forgets `context`'s snapshot and rewrites the file.
    public func remove(_ context: EvaluationContext) throws(FallbackWriteError) {
        try mutateAndPersist { $0.remove(context.fingerprint) }
        if currentContextFingerprint == context.fingerprint { serving.activate(.empty, reasonOverride: .cached) }
    }

    /// Forgets every snapshot (for example at logout) and rewrites the file.
    public func removeAll() throws(FallbackWriteError) {
        try mutateAndPersist { $0.removeAll() }
        serving.activate(.empty, reasonOverride: .cached)
    }

    private func mutateAndPersist(_ change: (inout FallbackStore) -> Void) throws(FallbackWriteError) {
        let failure = store.withLock { s -> FileIOError? in
            do throws(FileIOError) {
                try s.store.commit(change)
                return nil
            } catch {
                return error
            }
        }
        if let failure {
            serving.emit(.fallbackWriteFailed(reason: failure.description))
            throw FallbackWriteError(reason: failure.description)
        }
    }

    /// Ends the change and event streams. Idempotent.
    public func shutdown() { serving.finish() }
}

/// Persisting the fallback file failed.
public struct FallbackWriteError: Error, Equatable, CustomStringConvertible {
    /// What failed, e.g. "rename failed: Is a directory (errno 21)".
    public let reason: String
    /// `reason`.
    public var description: String { reason }
}
