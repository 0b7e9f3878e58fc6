public import Foundation

/// The Last-Known-Good store: per context, the last snapshot a service gave and the entity
/// tag that validates it, in one key-value file on disk, with the kill held on the device and
/// the flag rules held for evaluation on the device. It fetches nothing and reports nothing:
/// ``FeatureFlagProvider`` and ``FallbackClient`` decide what of it may be served, and say
/// what they found.
///
/// - **Start.** Creating a store reads the file synchronously — meant for launch, before the
///   first frame — and never fails: an unusable file is moved aside to `<file>.corrupt`, the
///   store starts empty, and ``loadOutcome`` says why.
/// - **The file.** A versioned binary format with checksums, replaced atomically with mode
///   0600, holding up to ``capacity`` contexts (least recently used evicted first).
/// - **Writes** go to memory at once, then to disk under an exclusive file lock, merged with
///   what other processes (an app and its extension) wrote meanwhile. The file I/O never runs
///   under the store's own lock: reading the store never waits on the disk.
/// - **Merged identities** (``FeatureFlagProvider/identify(merging:)``) keep each member
///   context's snapshot and tag here too, in memory only.
/// - **Nothing on disk** — ``inMemory(capacity:)`` — for an app whose policy forbids keeping
///   flag values on the device (OFREP ADR-0009's `disabled` cache mode).
public final class LastKnownGoodStore: Sendable {
    /// What loading the file found.
    internal enum LoadOutcome: Sendable, Equatable {
        /// The file was read: how many contexts it holds and its size in bytes.
        case loaded(contexts: Int, bytes: Int)
        /// There was no file yet (first launch): the store starts empty.
        case noFile
        /// The file could not be used; the store starts empty. `keptAt` is where the file was
        /// moved for diagnosis (nil when it could not or should not be moved).
        case rejected(reason: String, keptAt: String?)
        /// The file exists but cannot be read now (permission denied — on iOS, before the first
        /// unlock after a reboot). It is kept in place, untouched; the store starts empty, and a
        /// write succeeds only once the file reads again, merging with what it holds.
        case unavailable(reason: String)
    }

    /// The file the snapshots live in (never opened when ``persists`` is false).
    public let fileURL: URL
    /// Whether the store reads and writes ``fileURL``: false for ``inMemory(capacity:)``.
    public let persists: Bool
    /// How many contexts the file keeps (the initialiser's `capacity`, within 1…1,022).
    public let capacity: Int
    /// The largest file a write leaves: what a read accepts (64 MiB).
    let fileLimit: Int
    /// What loading the file found.
    let loadOutcome: LoadOutcome
    /// What deserves attention about a file that was loaded (owned by another user, or open
    /// to others), if anything. Its flags are used all the same.
    public let loadWarning: String?

    /// A change not yet on disk, in the order it was made.
    private struct Change {
        let sequence: Int
        let apply: @Sendable (inout StoreContent) -> Void
    }

    private struct State {
        var content: StoreContent
        /// Changes made in memory and not yet written, oldest first. A writer writes every
        /// change up to its own, in order, so a later change is never overwritten by an older one.
        var unwritten: [Change] = []
        var nextSequence = 0
        /// The members of the merged identity last fetched, by identity fingerprint.
        var members: (identity: String, flags: [String: StoredFlags])?
    }

    private let state: Locked<State>
    /// Whether a write may start now (see ``DiskWriteGate``).
    private let gate: DiskWriteGate
    /// How many times this store replaced its file (each an fsync'd write).
    private let fileWrites = Locked(0)
    /// How many times this store replaced its file: for tests that count writes.
    package var fileWriteCount: Int { fileWrites.withLock { $0 } }

    /// The name that makes the default location per app: the main bundle's identifier on
    /// Apple platforms (`com.example.pos`), else the process's name. Two apps of one Mac user
    /// or one Linux account therefore never share a file by default.
    public static var defaultAppName: String {
        StoreLocation.folderName(Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName)
    }

    /// The file's default place, `<base>/<appName>/flags.lkg`, where `<base>` is Application
    /// Support on iOS, macOS, watchOS and visionOS, Caches on tvOS (the only writable place
    /// there; the system may purge it — see `Docs/iOS.md`), and `$XDG_STATE_HOME` (else
    /// `~/.local/state`) on Linux. `appName` defaults to ``defaultAppName``. This function only
    /// computes the URL.
    public static func defaultFileURL(appName: String = LastKnownGoodStore.defaultAppName) -> URL {
        StoreLocation.file(in: StoreLocation.base(), appName: appName)
    }

    /// Loads the store at `fileURL` (any path; the directory is created on first write),
    /// keeping up to `capacity` contexts (at least 1, at most 1,022), and the most recent of
    /// them only while the file stays within 64 MiB (the largest file a launch reads).
    public convenience init(fileURL: URL = LastKnownGoodStore.defaultFileURL(), capacity: Int = 5) {
        self.init(fileURL: fileURL, capacity: capacity, read: FileIO.read)
    }

    /// A store that keeps up to `capacity` contexts' snapshots for this process only: nothing
    /// is read when it is created and nothing is ever written — OFREP ADR-0009's `disabled`
    /// cache mode, for an app whose policy forbids keeping flag values on the device. What it
    /// costs: a launch serves bundled and code defaults until the first fetch (a launch offline
    /// serves only those), a kill switch holds for the session only, and a provider given this
    /// store runs without its crash-loop guard (the guard's journal is a file beside the
    /// store's; ``FeatureFlagProvider`` says so with a `fallback_warning` event).
    /// ``fileURL`` is `/dev/null`, never opened.
    public static func inMemory(capacity: Int = 5) -> LastKnownGoodStore {
        // It finds no file (the one reader it is given) and its changes stay in memory (`commit`).
        LastKnownGoodStore(
            fileURL: URL(fileURLWithPath: "/dev/null"), capacity: capacity, read: { _ throws(FileIOError) in throw .notFound },
            persists: false)
    }

    /// The designated initialiser, with the file reader, the write gate and the largest file
    /// written as seams for tests; `persists: false` keeps every change in memory.
    init(
        fileURL: URL, capacity: Int, read: (String) throws(FileIOError) -> [UInt8], gate: DiskWriteGate = .system,
        fileLimit: Int = FileIO.maxReadSize, persists: Bool = true
    ) {
        self.gate = gate
        self.fileURL = fileURL
        self.persists = persists
        self.fileLimit = fileLimit
        self.capacity = min(max(1, capacity), FallbackFileFormat.maxContexts)
        let path = fileURL.fileSystemPath
        let (content, outcome) = StoreContent.load(path: path, capacity: self.capacity, read: read)
        self.loadOutcome = outcome
        self.loadWarning = content.warning
        self.state = Locked(State(content: content))
        // Temp files of a process that died while writing are removed by the next write, under
        // the file lock and inside the write gate: opening the store only reads (no lock taken
        // at launch, where an app may be suspended at any moment, and nothing the first read
        // does not need).
    }

    // MARK: Reading (memory only, never the disk)

    /// The Last-Known-Good for `context`, if stored and readable.
    func lastKnownGood(for context: EvaluationContext) -> StoredFlags? {
        if case .found(let stored)? = lookup(context.fingerprint) { return stored }
        return nil
    }

    /// What is stored for `fingerprint`: found, nothing, or an entry that does not decode
    /// (dropped; the caller reports it).
    func lookup(_ fingerprint: String) -> StoredLookup? {
        state.withLock { $0.content.lookup(fingerprint) }
    }

    /// Looks `fingerprint` up and marks it used (it moves to the front at the next write).
    func use(_ fingerprint: String) -> StoredLookup? {
        state.withLock { s in
            let found = s.content.lookup(fingerprint)
            if case .found = found { s.content.touch(fingerprint) }
            return found
        }
    }

    /// Fingerprints of the stored contexts, most recently used first.
    package var fingerprints: [String] { state.withLock { $0.content.fingerprints } }

    /// The kill switch held on this device, if a service turned it on and no successful fetch
    /// for the context served has turned it off since.
    var killHold: KillHold? { state.withLock { $0.content.killHold } }

    /// The flag definitions held for evaluation on the device (the last a local-evaluation
    /// endpoint fetched), if any.
    package func localRules(readBy endpoint: any LocalEvaluationEndpoint) -> (any HeldRules)? {
        state.withLock { $0.content.localRules(readBy: endpoint) }
    }

    /// Whether flag definitions are held for local evaluation (nothing is parsed).
    package var holdsLocalRules: Bool { state.withLock { $0.content.holdsLocalRules } }

    /// The held definitions' entity tag, read without parsing them.
    package var localRulesTag: EntityTag? { state.withLock { $0.content.localRulesTag } }

    /// Holds the kill switch on the device (`hold`) or releases it (nil), and writes the file.
    /// Nothing is written when nothing changes.
    func setKillHold(_ hold: KillHold?) throws(FlagError) {
        let unchanged = state.withLock { !$0.content.changesKillHold(to: hold) }
        if unchanged { return }
        try commit { $0.killHold = hold }
    }

    /// The members' snapshots last kept for the merged identity `identity`.
    func members(of identity: String) -> [String: StoredFlags] {
        state.withLock { s in s.members?.identity == identity ? s.members?.flags ?? [:] : [:] }
    }

    /// Keeps `flags` as the members' snapshots of the merged identity `identity` (memory only),
    /// replacing those of any other identity.
    func keepMembers(_ flags: [String: StoredFlags], of identity: String) {
        state.withLock { $0.members = (identity, flags) }
    }

    // MARK: Writing

    /// Stores `snapshot` and its entity tag as `context`'s Last-Known-Good (most recently
    /// used), evicting the least recently used context beyond capacity. Blocking file I/O
    /// (lock, read, write, fsync, rename; up to 2 s waiting for another process): call it off
    /// the main thread. Readers of the store never wait for it.
    /// - Throws: ``FlagError`` when the file cannot be written; the snapshot is still kept in
    ///   memory for this session.
    package func save(_ snapshot: FlagSnapshot, etag: EntityTag?, for context: EvaluationContext) throws(FlagError) {
        try save(StoredFlags(snapshot: snapshot, etag: etag), for: context)
    }

    /// Stores `stored` as `context`'s Last-Known-Good, as ``save(_:etag:for:)`` does — or, when
    /// the store already holds the same content for `context` (``StoredFlags/sameContent(as:)``:
    /// a 200 that repeats what is stored), only marks it used: no file I/O.
    /// With `killHold` (when not nil), the kill hold is set (or released, `.some(nil)`) in the
    /// same commit: one write of the file for a kill and the snapshot that carried it.
    /// With `members` (a merged identity's members' answers, by context fingerprint), those are
    /// stored too, in the same commit and before it (the merged identity is the most recently
    /// used): a relaunch asks the service for each member conditionally, and with trusted keys
    /// rebuilds the merge from the members' signed answers. The merge decides whether anything
    /// is written: it is made from them.
    func save(
        _ stored: StoredFlags, for context: EvaluationContext, killHold: KillHold?? = nil, members: [String: StoredFlags] = [:]
    ) throws(FlagError) {
        let fingerprint = context.fingerprint
        let unchanged = state.withLock { s -> Bool in
            if let killHold, s.content.changesKillHold(to: killHold) { return false }
            guard stored.snapshot.heldRules == nil, case .found(let held)? = s.content.lookup(fingerprint),
                held.sameContent(as: stored)
            else { return false }
            for member in members.keys { s.content.touch(member) }
            s.content.touch(fingerprint)
            return true
        }
        if unchanged { return }
        let payload = SnapshotCodec.encode(stored)
        // Rules the snapshot was evaluated from are kept once, for every context.
        let rules = stored.snapshot.heldRules
        try commit { content in
            for (member, answer) in members { content.put(payload: SnapshotCodec.encode(answer), stored: answer, for: member) }
            content.put(payload: payload, stored: stored, for: fingerprint)
            if let rules { content.setLocalRules(rules) }
            if let killHold, content.changesKillHold(to: killHold) { content.killHold = killHold }
        }
    }

    /// Keeps a copy of the file as it is now beside it (`<file>.corrupt`, `-2` … `-9`), for
    /// diagnosis, then forgets `context`'s snapshot: for a snapshot that must not be served
    /// (one whose signature no longer matches). Returns where the copy went, if it was made.
    package func setAside(_ context: EvaluationContext) -> String? {
        let keptAt = keepCopy()
        try? remove(context)
        return keptAt
    }

    /// ``setAside(_:)`` for the flag rules held for local evaluation.
    package func setAsideLocalRules() -> String? {
        let keptAt = keepCopy()
        try? commit { $0.dropLocalRules() }
        return keptAt
    }

    /// A copy of the file as it is now, at a free `.corrupt` path; where it went.
    private func keepCopy() -> String? {
        guard persists else { return nil }
        let path = fileURL.fileSystemPath
        guard let bytes = try? FileIO.read(path) else { return nil }
        let destination = FileIO.quarantinePath(for: path)
        return (try? FileIO.writeAtomically(bytes, to: destination)) != nil ? destination : nil
    }

    /// Forgets `context`'s snapshot and rewrites the file.
    public func remove(_ context: EvaluationContext) throws(FlagError) {
        let fingerprint = context.fingerprint
        try commit { $0.remove(fingerprint) }
    }

    /// Forgets every snapshot (for example at logout) and rewrites the file.
    public func removeAll() throws(FlagError) {
        try commit { $0.removeAll() }
    }

    /// Applies `change` in memory at once, then writes it: under the file lock, every change
    /// not yet written up to this one is applied in order to the file's current content, the
    /// result replaces the file, and memory adopts it (with the changes still unwritten applied
    /// on top). Only the two short memory steps hold the store's lock. A store that does not
    /// persist stops after the change in memory.
    private func commit(_ apply: @escaping @Sendable (inout StoreContent) -> Void) throws(FlagError) {
        guard persists else {
            // Nothing on disk: the change in memory is the whole of it (and the uses noted for
            // the next write are dropped: there is none).
            state.withLock { s in
                apply(&s.content)
                _ = s.content.takeTouches()
            }
            return
        }
        let (sequence, blocked, path) = state.withLock { s -> (Int, String?, String) in
            apply(&s.content)
            let sequence = s.nextSequence
            s.nextSequence += 1
            if s.content.writeBlockedReason == nil { s.unwritten.append(Change(sequence: sequence, apply: apply)) }
            return (sequence, s.content.writeBlockedReason, s.content.path)
        }
        if let blocked { throw FlagError(.general, blocked) }
        var failure: FileIOError?
        let ran = gate.perform("FeatureFlags: save flags") {
            do throws(FileIOError) {
                try write(upTo: sequence, path: path)
            } catch {
                failure = error
            }
        }
        guard ran else {
            // Not started, lock not taken: the change stays unwritten, for the next write.
            throw FlagError(.general, Self.notStartedReason)
        }
        if let failure {
            state.withLock { s in s.unwritten.removeAll { $0.sequence == sequence } }
            throw FlagError(.general, failure.description)
        }
    }

    /// Why a write did not start: the process may be suspended before it could end.
    static let notStartedReason =
        "not written now: the system gave no time to finish before suspending the app; kept in memory, written with the next save"

    /// Under the file lock, taken and released within this call: applies every unwritten
    /// change up to `sequence` to the file's current content, replaces the file, and adopts it.
    private func write(upTo sequence: Int, path: String) throws(FileIOError) {
        try FileIO.makeDirectory(FileIO.parentDirectory(of: path))
        let lock = try FileLock.acquire(path + ".lock")
        defer { lock.release() }
        let (batch, touches, empty) = state.withLock { s in
            (s.unwritten.filter { $0.sequence <= sequence }, s.content.takeTouches(), StoreContent(path: path, capacity: capacity))
        }
        // Another writer of this process wrote this change with its own.
        guard !batch.isEmpty else { return }
        FileIO.removeStaleTempFiles(besides: path)
        var written = try empty.onDisk()
        for fingerprint in touches { written.touch(fingerprint) }
        _ = written.takeTouches()
        for change in batch { change.apply(&written) }
        try written.fit(within: fileLimit)
        try FileIO.writeAtomically(FallbackFileFormat.encode(written.fileEntries), to: path)
        fileWrites.withLock { $0 += 1 }
        // The changes queued since the last write, usually one: a list, not a `Set` (no
        // hashing code for one use).
        let done = batch.map(\.sequence)
        state.withLock { s in
            s.unwritten.removeAll { done.contains($0.sequence) }
            var adopted = written
            for change in s.unwritten { change.apply(&adopted) }
            s.content.adopt(adopted)
        }
    }
}

/// A stored snapshot, the entity tag that validates it, and what else the full answer said
/// that a 304 cannot repeat: the change streams it advertised.
internal struct StoredFlags: Sendable, Equatable {
    /// The flags as the service gave them.
    package let snapshot: FlagSnapshot
    /// The tag to send as `If-None-Match`, if the service gave one.
    package let etag: EntityTag?
    /// The change streams the answer advertised (empty: none); nil when not known (stored by
    /// an earlier version, or by a caller that did not say).
    package let streams: [EventStreamLink]?

    /// A stored snapshot.
    package init(snapshot: FlagSnapshot, etag: EntityTag?, streams: [EventStreamLink]? = nil) {
        self.snapshot = snapshot
        self.etag = etag
        self.streams = streams
    }

    /// Whether `other` stores the same thing, whenever each was fetched: same flags, version,
    /// TTL, context, tag, streams, signature (a document signed again with the same values is
    /// new: its signing time and expiry are) and reading of missing flags. Storing it again
    /// would rewrite the file with the same content (only the fetch time would differ, which a
    /// 304 does not record either). Rules held for local evaluation are stored apart and not
    /// compared.
    package func sameContent(as other: StoredFlags) -> Bool {
        etag == other.etag && streams == other.streams && snapshot.version == other.snapshot.version
            && snapshot.ttl == other.snapshot.ttl && snapshot.contextFingerprint == other.snapshot.contextFingerprint
            && snapshot.signature == other.snapshot.signature && snapshot.missingFlagsAreOff == other.snapshot.missingFlagsAreOff
            && snapshot.storage.sameEntries(as: other.snapshot.storage)
    }
}
