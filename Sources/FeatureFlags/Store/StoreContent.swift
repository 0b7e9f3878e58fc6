/// The fallback file's content in memory, most recently used first, decoded lazily; the store keeps one under its lock.
struct StoreContent {
    let path: String
    let capacity: Int
    private(set) var entries: [FallbackFileFormat.Entry] = []
    /// The kill switch held on the device, if any (a reserved entry in the file).
    var killHold: KillHold?
    /// The flag definitions held for local evaluation, encoded (a reserved entry in the file).
    private(set) var rulesPayload: ArraySlice<UInt8>?
    /// ``rulesPayload`` decoded, on first use.
    private var decodedRules: (any HeldRules)?
    private var decoded: [String: StoredFlags] = [:]
    /// A warning about the loaded file's owner or permissions, if any.
    var warning: String?
    /// Set when an unusable file could not be moved aside: writing would destroy it.
    private(set) var writeBlockedReason: String?
    /// Contexts used since the last write, in order: replayed on the file at the next write.
    private var pendingTouches: [String] = []

    init(path: String, capacity: Int) {
        self.path = path
        self.capacity = min(max(1, capacity), FallbackFileFormat.maxContexts)
    }

    /// Reads and checks the file. Never throws: problems become the outcome.
    static func load(
        path: String, capacity: Int, read: (String) throws(FileIOError) -> [UInt8] = FileIO.read
    ) -> (StoreContent, LastKnownGoodStore.LoadOutcome) {
        var content = StoreContent(path: path, capacity: capacity)
        let bytes: [UInt8]
        do {
            bytes = try read(path)
        } catch .notFound {
            return (content, .noFile)
        } catch .isDirectory {
            // Never move someone's directory; writes will fail and say so.
            return (content, .rejected(reason: FileIOError.isDirectory.description, keptAt: nil))
        } catch .permissionDenied {
            // Unreadable is not corrupt (iOS Data Protection before first unlock): keep it in place.
            return (content, .unavailable(reason: "unreadable for now: \(FileIOError.permissionDenied)"))
        } catch {
            let outcome = content.setAside(reason: "unreadable: \(error)")
            return (content, outcome)
        }
        do {
            content.take(try FallbackFileFormat.decode(bytes))
            content.warning = FileIO.ownershipWarning(path)
            return (content, .loaded(contexts: content.fingerprints.count, bytes: bytes.count))
        } catch {
            let outcome = content.setAside(reason: error.description)
            return (content, outcome)
        }
    }

    /// Moves the unusable file aside so that the next write cannot destroy it.
    private mutating func setAside(reason: String) -> LastKnownGoodStore.LoadOutcome {
        let quarantine = FileIO.quarantinePath(for: path)
        do {
            try FileIO.move(path, to: quarantine)
            return .rejected(reason: reason, keptAt: quarantine)
        } catch {
            writeBlockedReason = "the unusable fallback file could not be moved aside (\(error)); not overwriting it"
            return .rejected(reason: reason, keptAt: nil)
        }
    }

    /// The stored contexts' fingerprints, most recently used first (a set's service entries are not contexts).
    var fingerprints: [String] { entries.map(\.fingerprint).filter { !$0.contains("@") } }

    /// Whether `hold` changes whether the kill switch is held (an existing hold keeps its time).
    func changesKillHold(to hold: KillHold?) -> Bool { (killHold != nil) != (hold != nil) }

    /// The snapshot for `fingerprint`, decoded on first use; an undecodable entry is dropped.
    mutating func lookup(_ fingerprint: String) -> StoredLookup? {
        if let cached = decoded[fingerprint] { return .found(cached) }
        guard let index = entries.firstIndex(where: { $0.fingerprint == fingerprint }) else { return nil }
        let result: StoredLookup = entries[index].payload.withUnsafeBytes { raw in
            do throws(ByteDecodingError) {
                return .found(try SnapshotCodec.decode(raw))
            } catch {
                return .unreadable(error)
            }
        }
        switch result {
        case .found(let stored): decoded[fingerprint] = stored
        case .unreadable: entries.remove(at: index)
        }
        return result
    }

    /// Stores `payload` (`stored` encoded) as most recent, evicting beyond capacity.
    mutating func put(payload: [UInt8], stored: StoredFlags, for fingerprint: String) {
        entries.removeAll { $0.fingerprint == fingerprint }
        entries.insert(.init(fingerprint: fingerprint, payload: ArraySlice(payload)), at: 0)
        decoded[fingerprint] = stored
        evictBeyondCapacity()
    }

    /// Drops whole contexts, least recently used first, until at most `capacity` remain: a set's service entries
    /// (`<fingerprint>@<service>`) count with their context and leave with it.
    private mutating func evictBeyondCapacity() {
        var contexts: [Substring] = [], seen: Set<String> = []
        for entry in entries {
            let context = Self.context(of: entry.fingerprint)
            if seen.insert(String(context)).inserted { contexts.append(context) }
        }
        while contexts.count > capacity || entries.count > FallbackFileFormat.maxContexts, let victim = contexts.popLast() {
            for entry in entries where Self.context(of: entry.fingerprint) == victim { decoded[entry.fingerprint] = nil }
            entries.removeAll { Self.context(of: $0.fingerprint) == victim }
        }
    }

    /// The context an entry belongs to: its key up to a service's `@`.
    static func context(of key: String) -> Substring { key.prefix { $0 != "@" } }

    /// Makes `fingerprint` the most recently used entry, if it is stored.
    mutating func touch(_ fingerprint: String) {
        guard let index = entries.firstIndex(where: { $0.fingerprint == fingerprint }) else { return }
        if index > 0 { entries.insert(entries.remove(at: index), at: 0) }
        pendingTouches.removeAll { $0 == fingerprint }
        pendingTouches.append(fingerprint)
    }

    /// The contexts used since the last call, in order of use.
    mutating func takeTouches() -> [String] {
        defer { pendingTouches.removeAll() }
        return pendingTouches
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

    /// The file as it is now (empty when missing); call with the file lock held, never the store's. Moves an unusable file aside.
    func onDisk() throws(FileIOError) -> StoreContent {
        var fresh = StoreContent(path: path, capacity: capacity)
        let bytes: [UInt8]
        do {
            bytes = try FileIO.read(path)
        } catch .notFound {
            return fresh
        }
        if let all = try? FallbackFileFormat.decode(bytes) {
            fresh.take(all)
        } else {
            try FileIO.move(path, to: FileIO.quarantinePath(for: path))
        }
        return fresh
    }

    /// Takes the entries read from a file: the kill hold apart, the contexts up to capacity.
    private mutating func take(_ all: [FallbackFileFormat.Entry]) {
        var contexts = all
        if let index = contexts.firstIndex(where: { $0.fingerprint == KillHold.entryName }) {
            killHold = KillHold.decode(contexts.remove(at: index).payload)
        }
        if let index = contexts.firstIndex(where: { $0.fingerprint == HeldRulesEntry.name }) {
            rulesPayload = contexts.remove(at: index).payload
            decodedRules = nil
        }
        entries = contexts
        evictBeyondCapacity()
    }

    /// Drops least recently used contexts until the file fits `limit`; throws ``FileIOError/refused(_:)`` if it never does.
    mutating func fit(within limit: Int) throws(FileIOError) {
        var size = FallbackFileFormat.encodedSize(fileEntries)
        while size > limit, entries.count > 1 {
            let dropped = entries.removeLast()
            decoded[dropped.fingerprint] = nil
            size -= FallbackFileFormat.encodedSize(dropped)
        }
        if size > limit {
            throw .refused("the fallback file would be \(size) bytes, more than the \(limit) a launch reads: not written")
        }
    }

    /// The entries to write: the contexts, then the kill hold and held rules, if any.
    var fileEntries: [FallbackFileFormat.Entry] {
        var all = entries
        if let killHold { all.append(.init(fingerprint: KillHold.entryName, payload: ArraySlice(killHold.encoded()))) }
        if let rulesPayload { all.append(.init(fingerprint: HeldRulesEntry.name, payload: rulesPayload)) }
        return all
    }

    /// The held local-evaluation rules, read by `endpoint` on first use (nil: none or unreadable).
    mutating func localRules(readBy endpoint: any LocalEvaluationEndpoint) -> (any HeldRules)? {
        if let decodedRules { return decodedRules }
        guard let rulesPayload else { return nil }
        decodedRules = HeldRulesEntry.rules(in: rulesPayload, readBy: endpoint)
        return decodedRules
    }

    /// Whether flag definitions are held for local evaluation (nothing is parsed).
    var holdsLocalRules: Bool { rulesPayload != nil }

    /// The held definitions' entity tag, read without parsing them.
    var localRulesTag: EntityTag? { rulesPayload.flatMap(HeldRulesEntry.tag(of:)) }

    /// Holds no rules for local evaluation any more.
    mutating func dropLocalRules() {
        rulesPayload = nil
        decodedRules = nil
    }

    /// Holds `rules` for local evaluation (replacing any held).
    mutating func setLocalRules(_ rules: any HeldRules) {
        rulesPayload = ArraySlice(HeldRulesEntry.encoded(rules))
        decodedRules = rules
    }

    /// Adopts `written` (on disk now), keeping unchanged decoded snapshots and unwritten touches.
    mutating func adopt(_ written: StoreContent) {
        var keep: [String: StoredFlags] = written.decoded
        for entry in written.entries where keep[entry.fingerprint] == nil {
            if let mine = entries.first(where: { $0.fingerprint == entry.fingerprint }), mine.payload == entry.payload {
                keep[entry.fingerprint] = decoded[entry.fingerprint]
            }
        }
        if written.rulesPayload != rulesPayload {
            decodedRules = written.decodedRules
        }
        rulesPayload = written.rulesPayload
        entries = written.entries
        killHold = written.killHold
        decoded = keep.filter { key, _ in entries.contains { $0.fingerprint == key } }
        for fingerprint in pendingTouches { touchInPlace(fingerprint) }
    }

    /// Moves `fingerprint` to the front without recording a touch.
    private mutating func touchInPlace(_ fingerprint: String) {
        guard let index = entries.firstIndex(where: { $0.fingerprint == fingerprint }), index > 0 else { return }
        entries.insert(entries.remove(at: index), at: 0)
    }
}

/// What the store holds for a context; not `Result`, whose `Failure: Error` check costs a conformance lookup at launch.
indirect enum StoredLookup {
    /// The snapshot.
    case found(StoredFlags)
    /// The entry's content does not decode (it was dropped).
    case unreadable(ByteDecodingError)
}
