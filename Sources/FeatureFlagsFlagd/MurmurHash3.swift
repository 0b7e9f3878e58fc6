import FeatureFlags

/// MurmurHash3, x86 32-bit variant (Austin Appleby's public-domain reference), seed 0 by
/// default: the hash flagd's `fractional` buckets with, over the UTF-8 bytes of a string.
enum MurmurHash3 {
    /// The 32-bit hash of `bytes`.
    static func x86_32<Bytes: Collection<UInt8>>(_ bytes: Bytes, seed: UInt32 = 0) -> UInt32 {
        let c1: UInt32 = 0xcc9e_2d51
        let c2: UInt32 = 0x1b87_3593
        var h1 = seed
        var block: UInt32 = 0
        var filled = 0
        var length = 0
        for byte in bytes {
            block |= UInt32(byte) << (8 * UInt32(filled))
            filled += 1
            length += 1
            if filled == 4 {
                var k1 = block &* c1
                k1 = (k1 << 15) | (k1 >> 17)
                k1 = k1 &* c2
                h1 ^= k1
                h1 = (h1 << 13) | (h1 >> 19)
                h1 = h1 &* 5 &+ 0xe654_6b64
                block = 0
                filled = 0
            }
        }
        if filled > 0 {
            var k1 = block &* c1
            k1 = (k1 << 15) | (k1 >> 17)
            k1 = k1 &* c2
            h1 ^= k1
        }
        h1 ^= UInt32(truncatingIfNeeded: length)
        h1 ^= h1 >> 16
        h1 = h1 &* 0x85eb_ca6b
        h1 ^= h1 >> 13
        h1 = h1 &* 0xc2b2_ae35
        h1 ^= h1 >> 16
        return h1
    }

    /// The hash of a string's UTF-8 bytes.
    static func x86_32(_ text: String, seed: UInt32 = 0) -> UInt32 {
        var text = text
        return text.withUTF8 { x86_32($0, seed: seed) }
    }
}
