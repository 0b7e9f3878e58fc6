import Foundation

/// The crash-loop guard's JSON record beside the Last-Known-Good file (`<file>.launches`), written atomically.
/// An unreadable journal counts as empty: the guard fails towards a normal launch, never towards losing the store.
struct LaunchJournal: Sendable, Equatable {
    /// Consecutive launches that never became healthy, this one included once recorded.
    var unhealthyLaunches = 0
    /// The digest of the values the most recent unhealthy launch started with.
    var crashDigest: String?
    /// Per context fingerprint: the snapshot the app was last healthy under.
    var healthy: [String: FlagSnapshot] = [:]

    /// At most this many contexts' healthy snapshots are kept (the most recent).
    static let capacity = 16

    /// How deep the journal's JSON may nest: a stored value's limit plus the journal's own wrapping levels.
    static let maxDepth = SnapshotCodec.maxDepth + 8

    /// The journal beside `storeFile`.
    static func path(besides storeFile: URL) -> String { storeFile.fileSystemPath + ".launches" }

    /// Reads the journal at `path`; a missing one is empty, an unreadable one is empty and said.
    static func read(_ path: String) -> (journal: LaunchJournal, problem: String?) {
        let bytes: [UInt8]
        do {
            bytes = try FileIO.read(path)
        } catch {
            if error == .notFound { return (LaunchJournal(), nil) }
            return (LaunchJournal(), "the launch journal could not be read (\(error.description)); counting from zero")
        }
        guard let value = try? FlagJSON.parse(bytes, maxDepth: maxDepth), let journal = LaunchJournal(value) else {
            return (LaunchJournal(), "the launch journal is damaged; counting from zero")
        }
        return (journal, nil)
    }

    /// Writes atomically within `limit` bytes, dropping the oldest healthy snapshots until it fits.
    func write(to path: String, protection: FileProtectionType? = nil, limit: Int = FileIO.maxReadSize) throws(FileIOError) {
        var journal = self
        var bytes = FlagJSON.bytes(journal.flagValue, sortedKeys: true)
        while bytes.count > limit, let oldest = journal.healthy.min(by: { $0.value.fetchedAt < $1.value.fetchedAt })?.key {
            journal.healthy[oldest] = nil
            bytes = FlagJSON.bytes(journal.flagValue, sortedKeys: true)
        }
        try FileIO.writeAtomically(bytes, to: path, protection: protection)
    }

    /// Writes the journal beside `store`'s file; the event to report when that failed.
    func save(besides store: LastKnownGoodStore) -> FlagEvent? {
        do throws(FileIOError) {
            try write(to: Self.path(besides: store.fileURL), protection: store.protection)
            return nil
        } catch {
            return .fallbackWriteFailed(reason: "the launch journal: \(error.description)")
        }
    }

    /// A stable digest of a snapshot's flags, to recognise the values the crashes happened under.
    static func digest(_ snapshot: FlagSnapshot) -> String {
        SHA256.hex(SHA256.digest(FlagDocument(flags: snapshot.flags).jsonBytes()))
    }

    var flagValue: FlagValue {
        var healthyMembers: [String: FlagValue] = [:]
        for (fingerprint, snapshot) in healthy {
            var document = FlagDocument(version: snapshot.version, ttl: snapshot.ttl, flags: snapshot.flags).flagValue.objectValue ?? [:]
            document["fetched_at"] = .double(snapshot.fetchedAt.timeIntervalSince1970)
            if snapshot.missingFlagsAreOff { document["missing_flags_off"] = true }
            healthyMembers[fingerprint] = .object(document)
        }
        var top: [String: FlagValue] = ["format": 1, "unhealthy_launches": .int(unhealthyLaunches), "healthy": .object(healthyMembers)]
        if let crashDigest { top["crash_digest"] = .string(crashDigest) }
        return .object(top)
    }

    init() {}

    init?(_ value: FlagValue) {
        guard case .object(let top) = value, top["format"] == 1, case .int(let count)? = top["unhealthy_launches"], count >= 0 else {
            return nil
        }
        // Any count past a few is the same verdict; cut, so that counting on cannot overflow.
        unhealthyLaunches = min(count, Int(Int32.max))
        crashDigest = top["crash_digest"]?.stringValue
        guard case .object(let members)? = top["healthy"] else { return nil }
        for (fingerprint, raw) in members {
            guard let document = try? FlagDocument(parsing: raw), let seconds = raw.objectValue?["fetched_at"]?.doubleValue else { return nil }
            var snapshot = FlagSnapshot(
                flags: document.flags, version: document.version, fetchedAt: Date(timeIntervalSince1970: seconds), ttl: document.ttl,
                contextFingerprint: fingerprint)
            snapshot.missingFlagsAreOff = raw.objectValue?["missing_flags_off"] == .bool(true)
            healthy[fingerprint] = snapshot
        }
    }

    /// Keeps `snapshot` as `fingerprint`'s healthy one, dropping the oldest beyond the capacity.
    mutating func keepHealthy(_ snapshot: FlagSnapshot, for fingerprint: String) {
        healthy[fingerprint] = snapshot
        while healthy.count > Self.capacity, let oldest = healthy.min(by: { $0.value.fetchedAt < $1.value.fetchedAt })?.key {
            healthy[oldest] = nil
        }
    }
}
