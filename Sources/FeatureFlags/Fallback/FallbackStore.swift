#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What loading the fallback file found.
public enum FallbackLoadOutcome: Sendable, Equatable {
    /// The file was read: how many contexts it holds and its size in bytes.
    case loaded(contexts: Int, bytes: Int)
    /// There was no file yet (first launch): the store starts empty.
    case noFile
    /// The file could not be used; the store starts empty. `keptAt` is where the file was
    /// moved for diagnosis (nil when it could not or should not be moved).
    case rejected(reason: String, keptAt: String?)
}

/// The fallback file's content in memory: encoded snapshots per context fingerprint, most
/// recently used first, decoded lazily. Not thread-safe; ``FallbackClient`` guards it.
struct FallbackStore {
    let path: String
    let capacity: Int
    private(set) var entries: [FallbackFileFormat.Entry] = []
    private var decoded: [String: FlagSnapshot] = [:]
    /// Set when an unusable file could not be moved aside: writing would destroy it.
    private(set) var writeBlockedReason: String?
    /// Contexts used (selected) since the last write, in order: replayed on the file's
    /// current content at the next commit, so the order of use survives merging.
    private var pendingTouches: [String] = []

    /// Where an unusable file is moved.
    var quarantinePath: String { path + ".corrupt" }

    init(path: String, capacity: Int) {
        self.path = path
        self.capacity = max(1, capacity)
    }

    /// Reads and checks the file. Never throws: problems become the outcome.
    static func load(
        path: String, capacity: Int, read: (String) throws(FileIOError) -> [UInt8] = FileIO.read
    ) -> (FallbackStore, FallbackLoadOutcome) {
        var store = FallbackStore(path: path, capacity: capacity)
        let bytes: [UInt8]
        do {
            bytes = try read(path)
        } catch .notFound {
            return (store, .noFile)
        } catch .isDirectory {
            // Never move someone's directory; writes will fail and say so.
            return (store, .rejected(reason: FileIOError.isDirectory.description, keptAt: nil))
        } catch {
            let outcome = store.setAside(reason: "unreadable: \(error)")
            return (store, outcome)
        }
        do {
            let all = try FallbackFileFormat.decode(bytes)
            store.entries = Array(all.prefix(store.capacity))
            return (store, .loaded(contexts: store.entries.count, bytes: bytes.count))
        } catch {
            let outcome = store.setAside(reason: error.description)
            return (store, outcome)
        }
    }

    /// Moves the unusable file aside so that the next write cannot destroy it.
    private mutating func setAside(reason: String) -> FallbackLoadOutcome {
        do {
            try FileIO.move(path, to: quarantinePath)
            return .rejected(reason: reason, keptAt: quarantinePath)
        } catch {
            writeBlockedReason = "the unusable fallback file could not be moved aside (\(error)); not overwriting it"
            return .rejected(reason: reason, keptAt: nil)
        }
    }

    /// Fingerprints, most recently used first.
    var fingerprints: [String] { entries.map(\.fingerprint) }

    /// The stored snapshot for `fingerprint`, decoded on first use. An entry whose checksum
    /// held but whose content does not decode is dropped and reported as `.failure`.
    mutating func snapshot(for fingerprint: String) -> Result<FlagSnapshot, ByteDecodingError>? {
        if let cached = decoded[fingerprint] { return .success(cached) }
        guard let index = entries.firstIndex(where: { $0.fingerprint == fingerprint }) else { return nil }
        let result: Result<FlagSnapshot, ByteDecodingError> = entries[index].payload.withUnsafeBytes { raw in
            do throws(ByteDecodingError) {
                return .success(try SnapshotCodec.decode(raw))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let snapshot): decoded[fingerprint] = snapshot
        case .failure: entries.remove(at: index)
        }
        return result
    }

    /// Stores `payload` (the encoded `snapshot`) as the most recent entry, evicting the least
    /// recently used beyond capacity. Returns the evicted fingerprints.
    @discardableResult
    mutating func put(payload: [UInt8], snapshot: FlagSnapshot, for fingerprint: String) -> [String] {
        entries.removeAll { $0.fingerprint == fingerprint }
        entries.insert(.init(fingerprint: fingerprint, payload: ArraySlice(payload)), at: 0)
        decoded[fingerprint] = snapshot.servedFrom(.fallback)
        var evicted: [String] = []
        while entries.count > capacity {
            let gone = entries.removeLast().fingerprint
            decoded[gone] = nil
            evicted.append(gone)
        }
        return evicted
    }

    /// Stores `snapshot` as the most recent entry (see ``put(payload:snapshot:for:)``).
    @discardableResult
    mutating func put(_ snapshot: FlagSnapshot, for fingerprint: String) -> [String] {
        put(payload: SnapshotCodec.encode(snapshot), snapshot: snapshot, for: fingerprint)
    }

    /// Makes `fingerprint` the most recently used entry; false if it is not stored.
    @discardableResult
    mutating func touch(_ fingerprint: String) -> Bool {
        guard let index = entries.firstIndex(where: { $0.fingerprint == fingerprint }) else { return false }
        if index > 0 { entries.insert(entries.remove(at: index), at: 0) }
        pendingTouches.removeAll { $0 == fingerprint }
        pendingTouches.append(fingerprint)
        return true
    }

    /// Forgets `fingerprint`'s entry.
    mutating func remove(_ fingerprint: String) {
        entries.removeAll { $0.fingerprint == fingerprint }
        decoded[fingerprint] = nil
    }

    /// Forgets every entry.
    mutating func removeAll() {
        entries.removeAll()
        decoded.removeAll()
    }

    /// Applies `change` here at once — this session sees it whatever happens on disk — and
    /// then to the file's *current* content under an exclusive lock, so that what other
    /// processes (an app and its extension) wrote meanwhile is merged, not lost; writes the
    /// result atomically and adopts it.
    mutating func commit(_ change: (inout FallbackStore) -> Void) throws(FileIOError) {
        change(&self)
        if let writeBlockedReason { throw .refused(writeBlockedReason) }
        try FileIO.makeDirectory(FileIO.parentDirectory(of: path))
        let lock = try FileLock.acquire(path + ".lock")
        defer { lock.release() }
        var merged = try onDisk()
        for fingerprint in pendingTouches { merged.touch(fingerprint) }
        pendingTouches.removeAll()
        change(&merged)
        try FileIO.writeAtomically(FallbackFileFormat.encode(merged.entries), to: path)
        adopt(merged)
    }

    /// The file as it is now (empty when missing). Called under the lock; an unusable file
    /// is moved aside first, so the write that follows cannot destroy it.
    private func onDisk() throws(FileIOError) -> FallbackStore {
        var fresh = FallbackStore(path: path, capacity: capacity)
        let bytes: [UInt8]
        do {
            bytes = try FileIO.read(path)
        } catch .notFound {
            return fresh
        }
        if let all = try? FallbackFileFormat.decode(bytes) {
            fresh.entries = Array(all.prefix(capacity))
        } else {
            try FileIO.move(path, to: quarantinePath)
        }
        return fresh
    }

    /// Takes `merged`'s entries, keeping decoded snapshots whose bytes did not change.
    private mutating func adopt(_ merged: FallbackStore) {
        var keep: [String: FlagSnapshot] = merged.decoded
        for entry in merged.entries where keep[entry.fingerprint] == nil {
            if let mine = entries.first(where: { $0.fingerprint == entry.fingerprint }), mine.payload == entry.payload {
                keep[entry.fingerprint] = decoded[entry.fingerprint]
            }
        }
        entries = merged.entries
        decoded = keep.filter { key, _ in entries.contains { $0.fingerprint == key } }
    }
}

/// An exclusive advisory lock (`flock`) on a lock file beside the fallback file, held while
/// one process reads, merges and replaces the file. Waits up to two seconds for another
/// process to finish, then gives up with an error rather than block the caller forever.
struct FileLock {
    let fd: Int32

    static func acquire(_ path: String, timeout: Duration = .seconds(2)) throws(FileIOError) -> FileLock {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .from(errno, "open lock file") }
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR, clock.now < deadline else {
                close(fd)
                throw .refused("the fallback file stayed locked by another process for \(timeout)")
            }
            usleep(2_000)
        }
        return FileLock(fd: fd)
    }

    func release() {
        flock(fd, LOCK_UN)
        close(fd)
    }
}
