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

    /// Stores `snapshot` as the most recent entry, evicting the least recently used beyond
    /// capacity. Returns the evicted fingerprints.
    @discardableResult
    mutating func put(_ snapshot: FlagSnapshot, for fingerprint: String) -> [String] {
        entries.removeAll { $0.fingerprint == fingerprint }
        entries.insert(.init(fingerprint: fingerprint, payload: ArraySlice(SnapshotCodec.encode(snapshot))), at: 0)
        decoded[fingerprint] = snapshot.servedFrom(.fallback)
        var evicted: [String] = []
        while entries.count > capacity {
            let gone = entries.removeLast().fingerprint
            decoded[gone] = nil
            evicted.append(gone)
        }
        return evicted
    }

    /// Makes `fingerprint` the most recently used entry; false if it is not stored.
    @discardableResult
    mutating func touch(_ fingerprint: String) -> Bool {
        guard let index = entries.firstIndex(where: { $0.fingerprint == fingerprint }) else { return false }
        if index > 0 { entries.insert(entries.remove(at: index), at: 0) }
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

    /// Writes every entry to the file atomically.
    mutating func persist() throws(FileIOError) {
        if let writeBlockedReason { throw .refused(writeBlockedReason) }
        try FileIO.writeAtomically(FallbackFileFormat.encode(entries), to: path)
    }
}
