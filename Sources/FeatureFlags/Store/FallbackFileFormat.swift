/// The fallback file: several contexts' snapshots, most recently used first.
///
/// ```
/// header := "FFLK" u16 formatVersion(=1) u16 reserved(=0) u64 fileLength u32 entryCount
///           u64 checksum(of the 20 bytes before it)
/// entry  := string contextFingerprint u32 payloadLength u64 checksum payload
///           (checksum = sum(payload) + 31 × sum(fingerprint), see ``Checksum``)
/// ```
///
/// The file length in the header catches truncation at any byte; the checksums catch
/// corruption; the format version lets a future release refuse or migrate old files.
enum FallbackFileFormat {
    static let magic: [UInt8] = Array("FFLK".utf8)
    static let formatVersion: UInt16 = 1
    static let headerSize = 28
    /// Upper bound on entries a file may claim; far above any capacity in use.
    static let maxEntries = 1024

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
        let located: Result<[(String, Range<Int>)], Problem> = bytes.withUnsafeBytes { raw in
            do {
                return .success(try locate(raw))
            } catch let problem as Problem {
                return .failure(problem)
            } catch let error as ByteDecodingError {
                return .failure(.corrupt("\(error.message) at byte \(error.offset)"))
            } catch {
                return .failure(.corrupt("\(error)"))
            }
        }
        return try located.get().map { Entry(fingerprint: $0.0, payload: bytes[$0.1]) }
    }

    /// Validates header and checksums; returns each entry's fingerprint and payload range.
    private static func locate(_ raw: UnsafeRawBufferPointer) throws -> [(String, Range<Int>)] {
        guard raw.count >= 4, raw[0] == magic[0], raw[1] == magic[1], raw[2] == magic[2], raw[3] == magic[3] else {
            throw Problem.notAFallbackFile
        }
        guard raw.count >= 6 else { throw Problem.truncated(expected: headerSize, actual: raw.count) }
        var r = ByteReader(raw, offset: 4)
        let version = try r.u16()
        guard version == formatVersion else { throw Problem.foreignVersion(version) }
        guard raw.count >= headerSize else { throw Problem.truncated(expected: headerSize, actual: raw.count) }
        _ = try r.u16()
        let length = try r.u64()
        let count = try r.u32()
        let headerSum = try r.u64()
        guard headerSum == Checksum.of(UnsafeRawBufferPointer(rebasing: raw[0..<20])) else {
            throw Problem.corrupt("header checksum mismatch")
        }
        guard length == UInt64(raw.count) else {
            throw Problem.truncated(expected: Int(clamping: length), actual: raw.count)
        }
        guard count <= maxEntries else { throw Problem.corrupt("implausible entry count \(count)") }
        var entries: [(String, Range<Int>)] = []
        entries.reserveCapacity(Int(count))
        for n in 0..<Int(count) {
            let fp = try r.bytes(try r.varint())
            let payloadLength = Int(try r.u32())
            let sum = try r.u64()
            let start = r.offset
            let payload = try r.bytes(payloadLength)
            guard sum == entryChecksum(fingerprint: fp, payload: payload) else {
                throw Problem.corrupt("entry \(n) checksum mismatch")
            }
            entries.append((String(decoding: fp, as: UTF8.self), start..<(start + payloadLength)))
        }
        guard r.remaining == 0 else { throw Problem.corrupt("trailing bytes after entries") }
        return entries
    }
}
