/// The fallback file: contexts' snapshots, most recently used first; the length catches truncation, checksums corruption.
/// ```
/// header := "FFLK" u16 formatVersion(=1) u16 reserved(=0) u64 fileLength u32 entryCount u64 checksum(of the 20 bytes before)
/// entry  := string contextFingerprint u32 payloadLength u64 checksum payload  (checksum = sum(payload) + 31 × sum(fingerprint))
/// ```
enum FallbackFileFormat {
    static let magic: [UInt8] = Array("FFLK".utf8)
    static let formatVersion: UInt16 = 1
    static let headerSize = 28
    /// Upper bound on entries a file may claim; far above any capacity in use.
    static let maxEntries = 1024
    /// The most contexts a file holds: ``maxEntries`` less the kill-hold and held-rules entries.
    static let maxContexts = maxEntries - 2

    /// The bytes `entries` take in the file, header included (what ``encode(_:)`` returns).
    static func encodedSize(_ entries: [Entry]) -> Int {
        entries.reduce(headerSize) { $0 + encodedSize($1) }
    }

    /// The bytes one entry takes in the file.
    static func encodedSize(_ entry: Entry) -> Int {
        let name = entry.fingerprint.utf8.count
        return ByteWriter.varintSize(name) + name + 4 + 8 + entry.payload.count
    }

    struct Entry: Equatable {
        let fingerprint: String
        /// The encoded snapshot (``SnapshotCodec``); a slice of the file's bytes after a load.
        let payload: ArraySlice<UInt8>
    }

    /// Why a file was refused.
    enum Problem: Error, Equatable, CustomStringConvertible {
        case empty
        case notAFallbackFile
        case foreignVersion(UInt16)
        case truncated(expected: Int, actual: Int)
        case corrupt(String)

        var description: String {
            switch self {
            case .empty: return "the file is empty"
            case .notAFallbackFile: return "the file is not a fallback file (bad magic)"
            case .foreignVersion(let v):
                return "format version \(v) is not supported (this build reads \(FallbackFileFormat.formatVersion))"
            case .truncated(let expected, let actual):
                return "the file is truncated or padded: \(actual) bytes, header says \(expected)"
            case .corrupt(let what): return "the file is corrupt: \(what)"
            }
        }
    }

    static func entryChecksum(fingerprint: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer) -> UInt64 {
        Checksum.of(payload) &+ Checksum.of(fingerprint) &* 31
    }

    static func encode(_ entries: [Entry]) -> [UInt8] {
        var body = ByteWriter(capacity: entries.reduce(64) { $0 + $1.payload.count + 64 })
        for entry in entries {
            let fp = Array(entry.fingerprint.utf8)
            let sum = fp.withUnsafeBytes { f in
                entry.payload.withUnsafeBytes { p in entryChecksum(fingerprint: f, payload: p) }
            }
            body.string(entry.fingerprint)
            body.u32(UInt32(entry.payload.count))
            body.u64(sum)
            body.bytes.append(contentsOf: entry.payload)
        }
        var header = ByteWriter(capacity: headerSize + body.bytes.count)
        header.raw(magic)
        header.u16(formatVersion)
        header.u16(0)
        header.u64(UInt64(headerSize + body.bytes.count))
        header.u32(UInt32(entries.count))
        header.u64(Checksum.of(header.bytes))
        header.raw(body.bytes)
        return header.bytes
    }

    /// Checks the whole file and returns its entries, most recently used first.
    static func decode(_ bytes: [UInt8]) throws(Problem) -> [Entry] {
        if bytes.isEmpty { throw .empty }
        // Typed throws and a non-generic `Location`: at launch each new generic type costs a lookup.
        var problem: Problem?
        let located: [Location] = bytes.withUnsafeBytes { raw in
            do throws(Problem) {
                return try locate(raw)
            } catch {
                problem = error
                return []
            }
        }
        if let problem { throw problem }
        return located.map { Entry(fingerprint: $0.fingerprint, payload: bytes[$0.start..<$0.end]) }
    }

    /// Where one entry's payload lies in the file.
    private struct Location {
        let fingerprint: String
        let start: Int
        let end: Int
    }

    /// ``ByteReader``'s failure as a ``Problem``.
    @inline(__always)
    private static func reading<T>(_ read: () throws(ByteDecodingError) -> T) throws(Problem) -> T {
        do throws(ByteDecodingError) {
            return try read()
        } catch {
            throw .corrupt("\(error.message) at byte \(error.offset)")
        }
    }

    private static func locate(_ raw: UnsafeRawBufferPointer) throws(Problem) -> [Location] {
        guard raw.count >= 4, raw[0] == magic[0], raw[1] == magic[1], raw[2] == magic[2], raw[3] == magic[3] else {
            throw Problem.notAFallbackFile
        }
        guard raw.count >= 6 else { throw Problem.truncated(expected: headerSize, actual: raw.count) }
        var r = ByteReader(raw, offset: 4)
        let version = try reading { () throws(ByteDecodingError) in try r.u16() }
        guard version == formatVersion else { throw Problem.foreignVersion(version) }
        guard raw.count >= headerSize else { throw Problem.truncated(expected: headerSize, actual: raw.count) }
        let (length, count, headerSum) = try reading { () throws(ByteDecodingError) in
            _ = try r.u16()
            return (try r.u64(), try r.u32(), try r.u64())
        }
        guard headerSum == Checksum.of(UnsafeRawBufferPointer(rebasing: raw[0..<20])) else {
            throw Problem.corrupt("header checksum mismatch")
        }
        guard length == UInt64(raw.count) else {
            throw Problem.truncated(expected: Int(clamping: length), actual: raw.count)
        }
        guard count <= maxEntries else { throw Problem.corrupt("implausible entry count \(count)") }
        var entries: [Location] = []
        entries.reserveCapacity(Int(count))
        for n in 0..<Int(count) {
            let (fp, sum, start, payload) = try reading { () throws(ByteDecodingError) in
                let fp = try r.bytes(try r.varint())
                let payloadLength = Int(try r.u32())
                let sum = try r.u64()
                let start = r.offset
                return (fp, sum, start, try r.bytes(payloadLength))
            }
            guard sum == entryChecksum(fingerprint: fp, payload: payload) else {
                throw Problem.corrupt("entry \(n) checksum mismatch")
            }
            entries.append(Location(fingerprint: String(decoding: fp, as: UTF8.self), start: start, end: start + payload.count))
        }
        guard r.remaining == 0 else { throw Problem.corrupt("trailing bytes after entries") }
        return entries
    }
}
