import Foundation

/// Held rules as a fallback-file entry; the fetcher's ``LocalEvaluationEndpoint`` reads them again on first use.
struct HeldRulesEntry {
    /// The reserved entry name (context fingerprints are 32 hex digits).
    static let name = "local-rules"

    /// What the endpoint reads the document with besides its bytes (``HeldRules/options``).
    let options: String
    /// The document's entity tag, if the service sent one.
    let etag: EntityTag?
    /// When the document was fetched.
    var fetchedAt: Date { Date(timeIntervalSinceReferenceDate: fetchedAtSeconds) }
    /// Seconds since the reference date (a `Date` has no fixed layout: `Support/FixedLayout.swift`).
    let fetchedAtSeconds: TimeInterval
    /// The document, as the service sent it.
    var document: [UInt8]
    /// The signed answer it came in, if trusted keys verified one (entry version 2).
    var envelope: [UInt8]?

    /// `u8 version(=1) string options u8 hasTag [string value string endpoint] f64 fetchedAt varint count bytes document`;
    /// version 2 appends `varint count bytes envelope` (the signed answer).
    static func encoded(_ rules: any HeldRules) -> [UInt8] {
        let document = rules.document, envelope = rules.envelope
        var w = ByteWriter(capacity: document.count + (envelope?.count ?? 0) + 96)
        w.u8(envelope == nil ? 1 : 2)
        w.string(rules.options)
        if let etag = rules.etag {
            w.u8(1)
            w.string(etag.value)
            w.string(etag.endpoint)
        } else {
            w.u8(0)
        }
        w.u64(rules.fetchedAt.timeIntervalSince1970.bitPattern)
        w.varint(document.count)
        w.raw(document)
        if let envelope {
            w.varint(envelope.count)
            w.raw(envelope)
        }
        return w.bytes
    }

    /// The rules' entity tag, from the entry's header only (nil: none, or an unreadable entry).
    static func tag(of payload: ArraySlice<UInt8>) -> EntityTag? { decode(payload, headerOnly: true)?.etag }

    /// The entry in `payload` (its `document` empty when `headerOnly`), or nil when it is not one this build reads.
    static func decode(_ payload: ArraySlice<UInt8>, headerOnly: Bool = false) -> HeldRulesEntry? {
        payload.withUnsafeBytes { raw -> HeldRulesEntry? in
            var r = ByteReader(raw)
            guard let version = try? r.u8(), version == 1 || version == 2, let options = try? r.string(), let hasTag = try? r.u8()
            else { return nil }
            var etag: EntityTag?
            if hasTag == 1 {
                guard let value = try? r.string(), let endpoint = try? r.string() else { return nil }
                etag = EntityTag(value, endpoint: endpoint)
            }
            guard let seconds = try? r.finiteDouble() else { return nil }
            var entry = HeldRulesEntry(
                options: options, etag: etag, fetchedAtSeconds: Date(timeIntervalSince1970: seconds).timeIntervalSinceReferenceDate,
                document: [], envelope: nil)
            if headerOnly { return entry }
            guard let count = try? r.count(), let bytes = try? r.bytes(count) else { return nil }
            entry.document = Array(bytes)
            if version == 2 {
                guard let n = try? r.count(), let signed = try? r.bytes(n) else { return nil }
                entry.envelope = Array(signed)
            }
            return r.remaining == 0 ? entry : nil
        }
    }

    /// The rules in `payload`, read again by `endpoint`; nil when the entry or document is unreadable.
    static func rules(in payload: ArraySlice<UInt8>, readBy endpoint: any LocalEvaluationEndpoint) -> (any HeldRules)? {
        guard let entry = decode(payload) else { return nil }
        return endpoint.rules(
            kept: entry.document, options: entry.options, etag: entry.etag, fetchedAt: entry.fetchedAt, envelope: entry.envelope)
    }
}
