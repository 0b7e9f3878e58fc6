/// A fast 64-bit checksum (FNV-1a over 64-bit words, then avalanche) for torn writes and bit rot, not tampering.
internal enum Checksum {
    private static let prime: UInt64 = 0x0000_0100_0000_01B3
    private static let offsetBasis: UInt64 = 0xcbf2_9ce4_8422_2325

    /// The checksum of `bytes`.
    package static func of(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var h = offsetBasis ^ UInt64(bytes.count)
        var i = 0
        let n = bytes.count
        while i + 8 <= n {
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            h = (h ^ word) &* prime
            h ^= h >> 29
            i += 8
        }
        while i < n {
            h = (h ^ UInt64(bytes[i])) &* prime
            i += 1
        }
        h ^= h >> 33
        h &*= 0xff51_afd7_ed55_8ccd
        h ^= h >> 33
        h &*= 0xc4ce_b9fe_1a85_ec53
        h ^= h >> 33
        return h
    }

    /// The checksum of `bytes`.
    package static func of(_ bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBytes { of($0) }
    }
}
