/// Appends little-endian integers, LEB128 lengths and length-prefixed strings.
struct ByteWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 1024) { bytes.reserveCapacity(capacity) }

    mutating func u8(_ v: UInt8) { bytes.append(v) }

    mutating func u16(_ v: UInt16) { fixed(UInt64(v), count: 2) }

    mutating func u32(_ v: UInt32) { fixed(UInt64(v), count: 4) }

    mutating func u64(_ v: UInt64) { fixed(v, count: 8) }

    private mutating func fixed(_ v: UInt64, count: Int) {
        for i in 0..<count { bytes.append(UInt8(truncatingIfNeeded: v >> UInt64(8 * i))) }
    }

    mutating func varint(_ v: Int) {
        var x = UInt64(v)
        while x >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: x) | 0x80)
            x >>= 7
        }
        bytes.append(UInt8(x))
    }

    /// The bytes ``varint(_:)`` writes for `v`.
    static func varintSize(_ v: Int) -> Int {
        var size = 1
        while UInt64(v) >> (7 * UInt64(size)) > 0 { size += 1 }
        return size
    }

    mutating func string(_ s: String) {
        var s = s
        s.withUTF8 { utf8 in
            varint(utf8.count)
            bytes.append(contentsOf: utf8)
        }
    }

    mutating func raw(_ other: [UInt8]) { bytes.append(contentsOf: other) }
}

/// Why stored bytes could not be decoded.
struct ByteDecodingError: Error, Equatable {
    let message: String
    let offset: Int
}

/// Reads what ``ByteWriter`` wrote; corrupt or truncated bytes throw instead of trapping, counts never exceed the bytes left.
struct ByteReader {
    let buffer: UnsafeRawBufferPointer
    private(set) var offset: Int

    init(_ buffer: UnsafeRawBufferPointer, offset: Int = 0) {
        self.buffer = buffer
        self.offset = offset
    }

    var remaining: Int { buffer.count - offset }

    func fail(_ message: String) -> ByteDecodingError { ByteDecodingError(message: message, offset: offset) }

    mutating func u8() throws(ByteDecodingError) -> UInt8 {
        guard offset < buffer.count else { throw fail("truncated") }
        defer { offset += 1 }
        return buffer[offset]
    }

    mutating func u16() throws(ByteDecodingError) -> UInt16 { UInt16(truncatingIfNeeded: try fixed(2)) }

    mutating func u32() throws(ByteDecodingError) -> UInt32 { UInt32(truncatingIfNeeded: try fixed(4)) }

    mutating func u64() throws(ByteDecodingError) -> UInt64 { try fixed(8) }

    /// A time or age in seconds, which must be finite: NaN or infinity means a damaged or forged file.
    mutating func finiteDouble() throws(ByteDecodingError) -> Double {
        let value = Double(bitPattern: try fixed(8))
        guard value.isFinite else { throw fail("a stored number is not finite") }
        return value
    }

    private mutating func fixed(_ count: Int) throws(ByteDecodingError) -> UInt64 {
        guard remaining >= count else { throw fail("truncated") }
        var v: UInt64 = 0
        for i in 0..<count { v |= UInt64(buffer[offset + i]) << UInt64(8 * i) }
        offset += count
        return v
    }

    mutating func varint() throws(ByteDecodingError) -> Int {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let b = try u8()
            result |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { break }
            shift += 7
            if shift > 56 { throw fail("length too long") }
        }
        guard result <= UInt64(Int32.max) else { throw fail("length out of range") }
        return Int(result)
    }

    /// A count of elements that each take at least one byte.
    mutating func count() throws(ByteDecodingError) -> Int {
        let n = try varint()
        guard n <= remaining else { throw fail("count larger than the data") }
        return n
    }

    mutating func bytes(_ count: Int) throws(ByteDecodingError) -> UnsafeRawBufferPointer {
        guard count >= 0, remaining >= count else { throw fail("truncated") }
        defer { offset += count }
        return UnsafeRawBufferPointer(rebasing: buffer[offset..<(offset + count)])
    }

    mutating func string() throws(ByteDecodingError) -> String {
        let n = try varint()
        let raw = try bytes(n)
        return String(decoding: raw, as: UTF8.self)
    }

    /// A flag name and its ``FlagNameHash``, hashed from the bytes in place when they are ASCII.
    mutating func flagName() throws(ByteDecodingError) -> (name: String, hash: Int) {
        let n = try varint()
        let raw = try bytes(n)
        let name = String(decoding: raw, as: UTF8.self)
        return (name, raw.allSatisfy { $0 < 0x80 } ? FlagNameHash.of(raw) : FlagNameHash.of(name))
    }
}
