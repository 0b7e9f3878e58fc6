import Foundation

/// Held rules as an entry of the fallback file: the store's format, kept with the store.
extension LocalRules {
    /// The reserved entry name (context fingerprints are 32 hex digits).
    static let entryName = "local-rules"

    /// `u8 version(=1) string bucketing u8 hasTag [string value string endpoint] f64 fetchedAt varint count bytes document`;
    /// version 2 adds `varint count bytes envelope` (the signed answer) after the document
    /// (a build before it does not read such an entry: it fetches the rules again).
    func encoded() -> [UInt8] {
        var w = ByteWriter(capacity: document.count + (envelope?.count ?? 0) + 96)
        w.u8(envelope == nil ? 1 : 2)
        w.string(definitions.bucketing.rawValue)
        if let etag {
            w.u8(1)
            w.string(etag.value)
            w.string(etag.endpoint)
        } else {
            w.u8(0)
        }
        w.u64(fetchedAt.timeIntervalSince1970.bitPattern)
        w.varint(document.count)
        w.raw(document)
        if let envelope {
            w.varint(envelope.count)
            w.raw(envelope)
        }
        return w.bytes
    }

    /// The entity tag of the rules in `payload`, read from its header without parsing the
    /// document (nil when there is none, or the entry is not one this build reads).
    static func tag(of payload: ArraySlice<UInt8>) -> EntityTag? {
        payload.withUnsafeBytes { raw -> EntityTag? in
            var r = ByteReader(raw)
            return header(&r)?.etag
        }
    }

    /// The rules in `payload`, or nil when it is not an entry this build reads (or the
    /// document no longer parses).
    static func decode(_ payload: ArraySlice<UInt8>) -> LocalRules? {
        let parts = payload.withUnsafeBytes { raw -> (Header, [UInt8], [UInt8]?)? in
            var r = ByteReader(raw)
            guard let header = header(&r), let count = try? r.count(), let bytes = try? r.bytes(count) else { return nil }
            var envelope: [UInt8]?
            if header.version == 2 {
                guard let n = try? r.count(), let signed = try? r.bytes(n) else { return nil }
                envelope = Array(signed)
            }
            guard r.remaining == 0 else { return nil }
            return (header, Array(bytes), envelope)
        }
        guard let (header, document, envelope) = parts, let definitions = try? FlagdDefinitions.parse(document, bucketing: header.bucketing)
        else {
            return nil
        }
        return LocalRules(definitions: definitions, document: document, etag: header.etag, fetchedAt: header.fetchedAt, envelope: envelope)
    }

    /// What precedes the document in an entry.
    private struct Header {
        let version: UInt8
        let bucketing: FractionalBucketing
        let etag: EntityTag?
        let fetchedAt: Date
    }

    private static func header(_ r: inout ByteReader) -> Header? {
        guard let version = try? r.u8(), version == 1 || version == 2, let name = try? r.string(),
            let bucketing = FractionalBucketing(rawValue: name),
            let hasTag = try? r.u8()
        else { return nil }
        var etag: EntityTag?
        if hasTag == 1 {
            guard let value = try? r.string(), let endpoint = try? r.string() else { return nil }
            etag = EntityTag(value, endpoint: endpoint)
        }
        guard let bits = try? r.u64() else { return nil }
        return Header(version: version, bucketing: bucketing, etag: etag, fetchedAt: Date(timeIntervalSince1970: Double(bitPattern: bits)))
    }
}
