public import Foundation

/// The Last-Known-Good store: per context, the last snapshot and entity tag, plus the held kill switch and local rules.
/// Creating it reads the file synchronously and never fails (an unusable file moves to `<file>.corrupt`). Writes go to
/// memory, then to disk under a file lock, merged with other processes' writes, never under the store's own lock.
public final class LastKnownGoodStore: Sendable {
    /// What loading the file found.
    internal enum LoadOutcome: Sendable, Equatable {
        /// The file was read: how many contexts it holds and its size in bytes.
        case loaded(contexts: Int, bytes: Int)
        /// No file yet (first launch).
        case noFile
        /// The file was unusable; `keptAt` is where it was moved for diagnosis, if it was.
        case rejected(reason: String, keptAt: String?)
        /// The file exists but is unreadable now (iOS before first unlock): left untouched; writes wait until it reads.
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
    /// A warning about the loaded file's owner or permissions, if any; its flags are used anyway.
    public let loadWarning: String?

    /// A change not yet on disk, in the order it was made.
    private struct Change {
        let sequence: Int
        let apply: @Sendable (inout StoreContent) -> Void
    }

    private struct State {
        var content: StoreContent
        /// Unwritten changes, oldest first; a writer writes every change up to its own, in order.
        var unwritten: [Change] = []
        var nextSequence = 0
        /// The members of the merged identity last fetched, by identity fingerprint.
        var members: (identity: String, flags: [String: StoredFlags])?
    }

    private let state: Locked<State>
    /// Whether a write may start now (see ``DiskWriteGate``).
    private let gate: DiskWriteGate
    /// The Data Protection class of the files this store creates.
    public let protection: FileProtectionType
    /// Applies it (a seam: tests record what would be protected where there is no Data Protection).
    private let protect: @Sendable (String, FileProtectionType) -> Void
    /// How many times this store replaced its file.
    private let fileWrites = Locked(0)
    /// How many times this store replaced its file (for tests).
    package var fileWriteCount: Int { fileWrites.withLock { $0 } }

    /// The per-app folder name: the main bundle identifier, else the process name.
    public static var defaultAppName: String {
        StoreLocation.folderName(Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName)
    }

    /// The default file, `<base>/<appName>/flags.lkg`: Application Support (Caches on tvOS, purgeable), or
    /// `$XDG_STATE_HOME` (else `~/.local/state`) on Linux. Only computes the URL.
    public static func defaultFileURL(appName: String = LastKnownGoodStore.defaultAppName) -> URL {
        StoreLocation.file(in: StoreLocation.base(), appName: appName)
    }

    /// Loads the store at `fileURL` (directory created on first write), keeping up to `capacity` contexts (1…1,022).
    /// On Apple platforms the file, its lock file and the copies it sets aside are created with the Data
    /// Protection class `protection`: by default readable once the device was unlocked after a reboot, and
    /// until it restarts — so a background refresh can use it while the device is locked (Docs/Security.md).
    public convenience init(
        fileURL: URL = LastKnownGoodStore.defaultFileURL(), capacity: Int = 5,
        protection: FileProtectionType = .completeUntilFirstUserAuthentication
    ) {
        self.init(fileURL: fileURL, capacity: capacity, read: FileIO.read, protection: protection)
    }

    /// A store that reads and writes nothing (OFREP ADR-0009 `disabled`): defaults until the first fetch, a kill switch
    /// for the session only, no crash-loop guard. ``fileURL`` is `/dev/null`.
    public static func inMemory(capacity: Int = 5) -> LastKnownGoodStore {
        LastKnownGoodStore(
            fileURL: URL(fileURLWithPath: "/dev/null"), capacity: capacity, read: { _ throws(FileIOError) in throw .notFound },
            persists: false)
    }

    /// Designated initialiser with test seams; `persists: false` keeps every change in memory.
    init(
        fileURL: URL, capacity: Int, read: (String) throws(FileIOError) -> [UInt8], gate: DiskWriteGate = .system,
        fileLimit: Int = FileIO.maxReadSize, persists: Bool = true,
        protection: FileProtectionType = .completeUntilFirstUserAuthentication,
        protect: @escaping @Sendable (String, FileProtectionType) -> Void = FileIO.protect
    ) {
        self.protection = protection
        self.protect = protect
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
        // Stale temp files are removed by the next write (under lock and gate): opening takes no lock at launch.
    }

    // MARK: Reading (memory only, never the disk)

    /// The Last-Known-Good for `context`, if stored and readable.
    func lastKnownGood(for context: EvaluationContext) -> StoredFlags? {
        if case .found(let stored)? = lookup(context.fingerprint) { return stored }
        return nil
    }

    /// What is stored for `fingerprint`; an entry that does not decode is dropped (caller reports).
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

    /// The kill switch held on this device until a successful fetch for the served context.
    var killHold: KillHold? { state.withLock { $0.content.killHold } }

    /// The flag definitions held for on-device evaluation, if any.
    package func localRules(readBy endpoint: any LocalEvaluationEndpoint) -> (any HeldRules)? {
        state.withLock { $0.content.localRules(readBy: endpoint) }
    }

    /// Whether flag definitions are held for local evaluation (nothing is parsed).
    package var holdsLocalRules: Bool { state.withLock { $0.content.holdsLocalRules } }

    /// The held definitions' entity tag, read without parsing them.
    package var localRulesTag: EntityTag? { state.withLock { $0.content.localRulesTag } }

    /// Holds (`hold`) or releases (nil) the kill switch and writes the file, if anything changed.
    func setKillHold(_ hold: KillHold?) throws(FlagError) {
        let unchanged = state.withLock { !$0.content.changesKillHold(to: hold) }
        if unchanged { return }
        try commit { $0.killHold = hold }
    }

    /// The members' snapshots last kept for the merged identity `identity`.
    func members(of identity: String) -> [String: StoredFlags] {
        state.withLock { s in s.members?.identity == identity ? s.members?.flags ?? [:] : [:] }
    }

    /// Keeps `flags` as `identity`'s member snapshots (memory only), replacing any other identity's.
    func keepMembers(_ flags: [String: StoredFlags], of identity: String) {
        state.withLock { $0.members = (identity, flags) }
    }

    // MARK: Writing

    /// Stores `snapshot` as `context`'s Last-Known-Good. Blocking file I/O (up to 2 s): call off the main thread.
    /// - Throws: ``FlagError`` when the file cannot be written; the snapshot stays in memory.
    package func save(_ snapshot: FlagSnapshot, etag: EntityTag?, for context: EvaluationContext) throws(FlagError) {
        try save(StoredFlags(snapshot: snapshot, etag: etag), for: context)
    }

    /// As ``save(_:etag:for:)``, or only marks it used when the same content is held (no I/O). `killHold` (`.some(nil)`
    /// releases) and `members` (member answers by fingerprint) go in the same commit.
    func save(
        _ stored: StoredFlags, for context: EvaluationContext, killHold: KillHold?? = nil, members: [String: StoredFlags] = [:]
    ) throws(FlagError) {
        let fingerprint = context.fingerprint
        let unchanged = state.withLock { s -> Bool in
            if let killHold, s.content.changesKillHold(to: killHold) { return false }
            guard stored.snapshot.heldRules == nil, case .found(let held)? = s.content.lookup(fingerprint),
                held.sameContent(as: stored)
            else { return false }
            // A member's own answer (a set's service, a merged identity's context) may change under an unchanged whole.
            for (member, answer) in members {
                guard case .found(let kept)? = s.content.lookup(member), kept.sameContent(as: answer) else { return false }
            }
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

    /// Copies the file to `<file>.corrupt`, then forgets `context`'s snapshot; returns the copy's path, if made.
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
        return (try? FileIO.writeAtomically(bytes, to: destination, protection: protection, protect: protect)) != nil ? destination : nil
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

    /// Applies `change` in memory, then writes all unwritten changes up to it; only the memory steps take the store's lock.
    private func commit(_ apply: @escaping @Sendable (inout StoreContent) -> Void) throws(FlagError) {
        guard persists else {
            // Nothing on disk: drop the uses noted for a next write.
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

    /// Under the file lock (taken and released here): applies unwritten changes up to `sequence` to the file, adopts it.
    private func write(upTo sequence: Int, path: String) throws(FileIOError) {
        try FileIO.makeDirectory(FileIO.parentDirectory(of: path))
        let lock = try FileLock.acquire(path + ".lock", protection: protection, protect: protect)
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
        try FileIO.writeAtomically(FallbackFileFormat.encode(written.fileEntries), to: path, protection: protection, protect: protect)
        fileWrites.withLock { $0 += 1 }
        let done = batch.map(\.sequence)
        state.withLock { s in
            s.unwritten.removeAll { done.contains($0.sequence) }
            var adopted = written
            for change in s.unwritten { change.apply(&adopted) }
            s.content.adopt(adopted)
        }
    }
}

/// A stored snapshot, its entity tag, and the change streams the full answer advertised.
internal struct StoredFlags: Sendable, Equatable {
    /// The flags as the service gave them.
    package let snapshot: FlagSnapshot
    /// The tag to send as `If-None-Match`, if the service gave one.
    package let etag: EntityTag?
    /// The change streams the answer advertised (empty: none); nil when not known.
    package let streams: [EventStreamLink]?

    /// A stored snapshot.
    package init(snapshot: FlagSnapshot, etag: EntityTag?, streams: [EventStreamLink]? = nil) {
        self.snapshot = snapshot
        self.etag = etag
        self.streams = streams
    }

    /// Whether `other` stores the same content, ignoring fetch time; held local-evaluation rules are not compared.
    package func sameContent(as other: StoredFlags) -> Bool {
        etag == other.etag && streams == other.streams && snapshot.version == other.snapshot.version
            && snapshot.ttl == other.snapshot.ttl && snapshot.contextFingerprint == other.snapshot.contextFingerprint
            && snapshot.signature == other.snapshot.signature && snapshot.missingFlagsAreOff == other.snapshot.missingFlagsAreOff
            && snapshot.storage.sameEntries(as: other.snapshot.storage)
    }
}
