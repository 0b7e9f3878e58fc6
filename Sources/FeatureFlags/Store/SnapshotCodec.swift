import Foundation

/// One stored snapshot and its entity tag in the fallback file, binary so launch reads 1,000 flags in under a millisecond.
/// ```
/// snapshot := u8 version(=1) u8 presence f64 fetchedAt [string version] [f64 ttl] [string etag] [string contextFingerprint]
///             [string etagEndpoint] [streams (bit 32)] [signed (bit 64)] varint flagCount flag*  (bit 128: missing flags off)
/// streams  := varint n (string url, u64 inactivityDelayNanoseconds, u8 bits (1 endpoint, 2 same origin), [string endpoint])*n
/// signed   := u8 bits (1 issuedAt, 2 expiresAt) [f64 issuedAt] [f64 expiresAt] string keyID varint n byte*n (the JWS)
/// flag     := string name u8 presence [value] [string variant] [string reason] [string errorCode] [varint n (string value)*n]
/// value    := u8 tag (0 null, 1 false, 2 true, 3 int i64, 4 double f64, 5 string, 6 list varint n value*n,
///             7 object varint n (string value)*n)
/// ```
enum SnapshotCodec {
    static let version: UInt8 = 1
    /// Deepest nesting of lists and objects accepted when decoding.
    static let maxDepth = FlagJSON.defaultMaxDepth

    private enum Tag: UInt8 {
        case null = 0, falseValue, trueValue, int, double, string, list, object
    }

    static func encode(_ stored: StoredFlags) -> [UInt8] {
        let snapshot = stored.snapshot
        var w = ByteWriter(capacity: 64 + snapshot.flags.count * 48)
        w.u8(version)
        var presence: UInt8 = 0
        if snapshot.version != nil { presence |= 1 }
        if snapshot.ttl != nil { presence |= 2 }
        if stored.etag != nil { presence |= 4 | 16 }
        if snapshot.contextFingerprint != nil { presence |= 8 }
        if stored.streams != nil { presence |= 32 }
        if snapshot.signature != nil { presence |= 64 }
        if snapshot.missingFlagsAreOff { presence |= 128 }
        w.u8(presence)
        w.u64(snapshot.fetchedAt.timeIntervalSince1970.bitPattern)
        if let v = snapshot.version { w.string(v) }
        if let t = snapshot.ttl { w.u64(t.bitPattern) }
        if let e = stored.etag { w.string(e.value) }
        if let f = snapshot.contextFingerprint { w.string(f) }
        if let e = stored.etag { w.string(e.endpoint) }
        if let streams = stored.streams { encodeStreams(streams, into: &w) }
        if let stamp = snapshot.signature {
            w.u8((stamp.issuedAt == nil ? 0 : 1) | (stamp.expiresAt == nil ? 0 : 2))
            if let t = stamp.issuedAt { w.u64(t.timeIntervalSince1970.bitPattern) }
            if let t = stamp.expiresAt { w.u64(t.timeIntervalSince1970.bitPattern) }
            w.string(stamp.keyID)
            w.varint(stamp.envelope.count)
            w.raw(stamp.envelope)
        }
        w.varint(snapshot.flags.count)
        for (name, entry) in snapshot.flags {
            w.string(name)
            var bits: UInt8 = 0
            if entry.value != nil { bits |= 1 }
            if entry.variant != nil { bits |= 2 }
            if entry.reason != nil { bits |= 4 }
            if entry.errorCode != nil { bits |= 8 }
            if !entry.metadata.isEmpty { bits |= 16 }
            w.u8(bits)
            if let v = entry.value { encodeValue(v, into: &w) }
            if let v = entry.variant { w.string(v) }
            if let r = entry.reason { w.string(r.rawValue) }
            if let c = entry.errorCode { w.string(c.rawValue) }
            if !entry.metadata.isEmpty { encodeMembers(entry.metadata, into: &w) }
        }
        return w.bytes
    }

    private static func encodeMembers(_ members: [String: FlagValue], into w: inout ByteWriter) {
        w.varint(members.count)
        for (k, v) in members {
            w.string(k)
            encodeValue(v, into: &w)
        }
    }

    static func encodeValue(_ value: FlagValue, into w: inout ByteWriter) {
        switch value {
        case .null: w.u8(Tag.null.rawValue)
        case .bool(let b): w.u8(b ? Tag.trueValue.rawValue : Tag.falseValue.rawValue)
        case .int(let i):
            w.u8(Tag.int.rawValue)
            w.u64(UInt64(bitPattern: Int64(i)))
        case .double(let d):
            w.u8(Tag.double.rawValue)
            w.u64(d.bitPattern)
        case .string(let s):
            w.u8(Tag.string.rawValue)
            w.string(s)
        case .list(let items):
            w.u8(Tag.list.rawValue)
            w.varint(items.count)
            for item in items { encodeValue(item, into: &w) }
        case .object(let members):
            w.u8(Tag.object.rawValue)
            encodeMembers(members, into: &w)
        }
    }

    /// Decodes a stored snapshot; a tag stored without endpoint gets an empty one, matching none.
    static func decode(_ buffer: UnsafeRawBufferPointer) throws(ByteDecodingError) -> StoredFlags {
        var r = ByteReader(buffer)
        guard try r.u8() == version else { throw r.fail("unknown snapshot encoding") }
        let presence = try r.u8()
        let fetchedAt = Date(timeIntervalSince1970: try r.finiteDouble())
        let version = presence & 1 != 0 ? try r.string() : nil
        let ttl = presence & 2 != 0 ? try r.finiteDouble() : nil
        let etag = presence & 4 != 0 ? try r.string() : nil
        let fingerprint = presence & 8 != 0 ? try r.string() : nil
        let etagEndpoint = presence & 16 != 0 ? try r.string() : ""
        let streams = presence & 32 != 0 ? try decodeStreams(&r) : nil
        var stamp: SignatureStamp?
        if presence & 64 != 0 {
            let bits = try r.u8()
            guard bits & ~3 == 0 else { throw r.fail("unknown signature fields") }
            let issuedAt = bits & 1 != 0 ? Date(timeIntervalSince1970: try r.finiteDouble()) : nil
            let expiresAt = bits & 2 != 0 ? Date(timeIntervalSince1970: try r.finiteDouble()) : nil
            let keyID = try r.string()
            let envelope = Array(try r.bytes(try r.count()))
            stamp = SignatureStamp(keyID: keyID, issuedAt: issuedAt, expiresAt: expiresAt, envelope: envelope)
        }
        let count = try r.count()
        // Straight into the table reads use: no dictionary is built at launch (see `FlagSet`).
        let table = try FlagTable(capacity: count) { (add) throws(ByteDecodingError) in
            for _ in 0..<count {
                let (name, hash) = try r.flagName()
                let bits = try r.u8()
                let value = bits & 1 != 0 ? try decodeValue(&r, depth: 0) : nil
                let variant = bits & 2 != 0 ? try r.string() : nil
                let reason = bits & 4 != 0 ? FlagReason(rawValue: try r.string()) : nil
                let code = bits & 8 != 0 ? FlagErrorCode(wire: try r.string()) : nil
                let metadata = bits & 16 != 0 ? try decodeMembers(&r, depth: 0) : [:]
                add(name, hash, value, FlagExtras.of(variant: variant, reason: reason, errorCode: code, metadata: metadata), true)
            }
        }
        guard r.remaining == 0 else { throw r.fail("trailing bytes after snapshot") }
        var snapshot = FlagSnapshot(
            storage: FlagSet(table: table), version: version, fetchedAt: fetchedAt, ttl: ttl,
            contextFingerprint: fingerprint)
        snapshot.signature = stamp
        snapshot.missingFlagsAreOff = presence & 128 != 0
        return StoredFlags(snapshot: snapshot, etag: etag.map { EntityTag($0, endpoint: etagEndpoint) }, streams: streams)
    }

    /// Writes kept stream links: not endpoint-opened ones (rebuilt at launch), at most ``maxStoredStreams`` (a read refuses more).
    private static func encodeStreams(_ all: [EventStreamLink], into w: inout ByteWriter) {
        let links = all.filter { $0.connection == nil }.prefix(maxStoredStreams)
        w.varint(links.count)
        for link in links {
            w.string(link.url.absoluteString)
            w.u64(UInt64(clamping: link.inactivityDelay.nanosecondsClamped))
            w.u8((link.endpoint != nil ? 1 : 0) | (link.sameOrigin ? 2 : 0))
            if let endpoint = link.endpoint { w.string(endpoint) }
        }
    }

    /// At most this many links are read back; a file claiming more is damaged.
    static let maxStoredStreams = 64

    private static func decodeStreams(_ r: inout ByteReader) throws(ByteDecodingError) -> [EventStreamLink] {
        let n = try r.count()
        guard n <= maxStoredStreams else { throw r.fail("too many stream links") }
        var links: [EventStreamLink] = []
        for _ in 0..<n {
            let text = try r.string()
            let nanoseconds = try r.u64()
            let bits = try r.u8()
            let endpoint = bits & 1 != 0 ? try r.string() : nil
            guard bits & ~3 == 0, let url = URL(string: text), let scheme = url.scheme?.lowercased(),
                scheme == "https" || scheme == "http", nanoseconds <= UInt64(Int64.max)
            else { throw r.fail("malformed stream link") }
            links.append(EventStreamLink(
                url: url, inactivityDelay: .nanoseconds(Int64(nanoseconds)), endpoint: endpoint, sameOrigin: bits & 2 != 0))
        }
        return links
    }

    private static func decodeMembers(_ r: inout ByteReader, depth: Int) throws(ByteDecodingError) -> [String: FlagValue] {
        let n = try r.count()
        var members: [String: FlagValue] = [:]
        members.reserveCapacity(n)
        for _ in 0..<n {
            let key = try r.string()
            members[key] = try decodeValue(&r, depth: depth + 1)
        }
        return members
    }

    private static func decodeValue(_ r: inout ByteReader, depth: Int) throws(ByteDecodingError) -> FlagValue {
        guard depth <= maxDepth else { throw r.fail("values nested too deep") }
        guard let tag = Tag(rawValue: try r.u8()) else { throw r.fail("unknown value tag") }
        switch tag {
        case .null: return .null
        case .falseValue: return .bool(false)
        case .trueValue: return .bool(true)
        case .int: return .int(Int(truncatingIfNeeded: Int64(bitPattern: try r.u64())))
        case .double: return .double(Double(bitPattern: try r.u64()))
        case .string: return .string(try r.string())
        case .list:
            let n = try r.count()
            var items: [FlagValue] = []
            items.reserveCapacity(n)
            for _ in 0..<n { items.append(try decodeValue(&r, depth: depth + 1)) }
            return .list(items)
        case .object:
            return .object(try decodeMembers(&r, depth: depth))
        }
    }
}
