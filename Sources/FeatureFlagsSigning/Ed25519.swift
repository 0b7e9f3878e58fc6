/// Ed25519 signature verification (RFC 8032, section 5.1.7), pure Swift, the same code on
/// every platform. Strict where the RFC is: a signature is 64 bytes, its `S` must be below the
/// group order `L` (no malleability), `R` must be the canonical encoding of the point the
/// equation gives (it is compared byte for byte with the encoding computed), a public key
/// that is not a point of the curve (or encodes `-0`) is refused. The check is the
/// cofactorless one, `[S]B = R + [k]A` with `k = SHA-512(R ‖ A ‖ M) mod L`, as most verifiers
/// compute it. Verification handles public data only: it is not written to run in constant time.
package enum Ed25519 {
    /// Whether `signature` is `publicKey`'s signature of `message`.
    package static func verify(signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == 64, publicKey.count == 32 else { return false }
        let r = Array(signature[0..<32])
        let s = Array(signature[32..<64])
        guard isBelowOrder(s), let negatedA = Point.decodeNegated(publicKey) else { return false }
        let k = GroupScalar.reduce(SHA512.hash(r, publicKey, message))
        // [k](−A) + [S]B, encoded, must be R's bytes.
        let computed = Point.combination(k, negatedA, s, Point.base)
        return computed.encoded() == r
    }

    /// The public key of the 32-byte private key `seed` (RFC 8032 5.1.5).
    package static func publicKey(seed: [UInt8]) -> [UInt8] {
        precondition(seed.count == 32, "an Ed25519 private key is 32 bytes")
        return Point.base.multipliedUniformly(by: secretScalar(seed)).encoded()
    }

    /// The signature of `message` by the 32-byte private key `seed` (RFC 8032 5.1.6);
    /// `publicKey`, when given, must be the seed's. The secret scalars go through a
    /// multiplication whose operations do not depend on them.
    package static func sign(_ message: [UInt8], seed: [UInt8], publicKey knownKey: [UInt8]? = nil) -> [UInt8] {
        precondition(seed.count == 32, "an Ed25519 private key is 32 bytes")
        let digest = SHA512.hash(seed)
        let a = clamped(Array(digest[0..<32]))
        // The public key is the seed's (a caller that signs often passes it, computed once).
        let publicKey = knownKey ?? Point.base.multipliedUniformly(by: a).encoded()
        let r = GroupScalar.reduce(SHA512.hash(Array(digest[32..<64]), message))
        let rEncoded = Point.base.multipliedUniformly(by: r).encoded()
        let k = GroupScalar.reduce(SHA512.hash(rEncoded, publicKey, message))
        return rEncoded + GroupScalar.multiplyAdd(k, a, r)
    }

    /// The secret scalar of a private key: the first half of its SHA-512, clamped.
    private static func secretScalar(_ seed: [UInt8]) -> [UInt8] { clamped(Array(SHA512.hash(seed)[0..<32])) }

    private static func clamped(_ bytes: [UInt8]) -> [UInt8] {
        var a = bytes
        a[0] &= 248
        a[31] &= 127
        a[31] |= 64
        return a
    }

    /// The group order L = 2^252 + 27742317777372353535851937790883648493, little-endian.
    static let order: [UInt8] = [
        0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10,
    ]

    /// Whether the little-endian 32-byte `s` is below L.
    static func isBelowOrder(_ s: [UInt8]) -> Bool {
        for i in stride(from: 31, through: 0, by: -1) where s[i] != order[i] {
            return s[i] < order[i]
        }
        return false
    }
}

/// An element of GF(2^255 − 19): sixteen 16-bit limbs, little-endian, held in 64-bit integers
/// so that sums and products can be carried lazily. Stored inline (no allocation per
/// operation); the arithmetic wraps rather than traps, though its bounds never reach overflow.
struct FieldElement: Equatable {
    typealias Limbs = (Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64)
    var limbs: Limbs

    init(_ values: [Int64]) {
        var limbs: Limbs = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &limbs) { raw in
            for (i, value) in values.prefix(16).enumerated() { raw.storeBytes(of: value, toByteOffset: i * 8, as: Int64.self) }
        }
        self.limbs = limbs
    }

    static let zero = FieldElement([])
    static let one = FieldElement([1])
    /// The curve constant d = −121665/121666.
    static let d = FieldElement([
        0x78a3, 0x1359, 0x4dca, 0x75eb, 0xd8ab, 0x4141, 0x0a4d, 0x0070, 0xe898, 0x7779, 0x4079, 0x8cc7, 0xfe73, 0x2b6f,
        0x6cee, 0x5203,
    ])
    /// 2d.
    static let d2 = FieldElement([
        0xf159, 0x26b2, 0x9b94, 0xebd6, 0xb156, 0x8283, 0x149a, 0x00e0, 0xd130, 0xeef3, 0x80f2, 0x198e, 0xfce7, 0x56df,
        0xd9dc, 0x2406,
    ])
    /// √−1.
    static let sqrtMinusOne = FieldElement([
        0xa0b0, 0x4a0e, 0x1b27, 0xc4ee, 0xe478, 0xad2f, 0x1806, 0x2f43, 0xd7a7, 0x3dfb, 0x0099, 0x2b4d, 0xdf0b, 0x4fc1,
        0x2480, 0x2b83,
    ])

    /// The element a 32-byte little-endian string encodes, its top bit ignored (values from
    /// p to 2^255 − 1 are taken modulo p, as most verifiers do).
    init(decoding bytes: [UInt8]) {
        var values = (0..<16).map { Int64(bytes[2 * $0]) | Int64(bytes[2 * $0 + 1]) << 8 }
        values[15] &= 0x7fff
        self.init(values)
    }

    /// Runs `body` with the limbs as a buffer to change.
    @inline(__always)
    mutating func withLimbs<R>(_ body: (UnsafeMutablePointer<Int64>) -> R) -> R {
        withUnsafeMutableBytes(of: &limbs) { body($0.baseAddress!.assumingMemoryBound(to: Int64.self)) }
    }

    /// Runs `body` with the limbs as a buffer to read.
    @inline(__always)
    func readLimbs<R>(_ body: (UnsafePointer<Int64>) -> R) -> R {
        withUnsafeBytes(of: limbs) { body($0.baseAddress!.assumingMemoryBound(to: Int64.self)) }
    }

    /// Carries every limb into 16 bits (the top limb's excess wraps around times 38).
    @inline(__always)
    static func carry(_ o: UnsafeMutablePointer<Int64>) {
        for i in 0..<16 {
            o[i] &+= 1 << 16
            let c = o[i] >> 16
            if i < 15 { o[i + 1] &+= c &- 1 } else { o[0] &+= 38 &* (c &- 1) }
            o[i] &-= c << 16
        }
    }

    static func + (a: FieldElement, b: FieldElement) -> FieldElement {
        var o = a
        o.withLimbs { op in b.readLimbs { bp in for i in 0..<16 { op[i] &+= bp[i] } } }
        return o
    }

    static func - (a: FieldElement, b: FieldElement) -> FieldElement {
        var o = a
        o.withLimbs { op in b.readLimbs { bp in for i in 0..<16 { op[i] &-= bp[i] } } }
        return o
    }

    static func * (a: FieldElement, b: FieldElement) -> FieldElement {
        var o = FieldElement.zero
        withUnsafeTemporaryAllocation(of: Int64.self, capacity: 31) { t in
            t.initialize(repeating: 0)
            a.readLimbs { ap in
                b.readLimbs { bp in
                    for i in 0..<16 {
                        let ai = ap[i]
                        for j in 0..<16 { t[i + j] &+= ai &* bp[j] }
                    }
                }
            }
            for i in 0..<15 { t[i] &+= 38 &* t[i + 16] }
            o.withLimbs { op in
                for i in 0..<16 { op[i] = t[i] }
                carry(op)
                carry(op)
            }
        }
        return o
    }

    var squared: FieldElement { self * self }

    /// Swaps `a` and `b` when `bit` is 1, with the same operations either way.
    static func swap(_ a: inout FieldElement, _ b: inout FieldElement, if bit: Int64) {
        let mask = ~(bit &- 1)
        a.withLimbs { ap in
            b.withLimbs { bp in
                for i in 0..<16 {
                    let t = mask & (ap[i] ^ bp[i])
                    ap[i] ^= t
                    bp[i] ^= t
                }
            }
        }
    }

    /// The multiplicative inverse (a^(p−2)).
    var inverse: FieldElement {
        var c = self
        for a in stride(from: 253, through: 0, by: -1) {
            c = c.squared
            if a != 2 && a != 4 { c = c * self }
        }
        return c
    }

    /// a^((p−5)/8), for square roots.
    var powerP58: FieldElement {
        var c = self
        for a in stride(from: 250, through: 0, by: -1) {
            c = c.squared
            if a != 1 { c = c * self }
        }
        return c
    }

    /// The canonical 32-byte little-endian encoding (fully reduced modulo p).
    var encoded: [UInt8] {
        var t = self
        var out = [UInt8](repeating: 0, count: 32)
        t.withLimbs { tp in
            Self.carry(tp)
            Self.carry(tp)
            Self.carry(tp)
            withUnsafeTemporaryAllocation(of: Int64.self, capacity: 16) { m in
                m.initialize(repeating: 0)
                for _ in 0..<2 {
                    m[0] = tp[0] &- 0xffed
                    for i in 1..<15 {
                        m[i] = tp[i] &- 0xffff &- ((m[i - 1] >> 16) & 1)
                        m[i - 1] &= 0xffff
                    }
                    m[15] = tp[15] &- 0x7fff &- ((m[14] >> 16) & 1)
                    let borrow = (m[15] >> 16) & 1
                    m[14] &= 0xffff
                    // Keep m (t − p) unless it borrowed, the same operations either way.
                    let keep = borrow &- 1
                    for i in 0..<16 { tp[i] ^= keep & (tp[i] ^ m[i]) }
                }
            }
            for i in 0..<16 {
                out[2 * i] = UInt8(truncatingIfNeeded: tp[i])
                out[2 * i + 1] = UInt8(truncatingIfNeeded: tp[i] >> 8)
            }
        }
        return out
    }

    /// The low bit of the canonical encoding (the "sign" of x).
    var isNegative: Bool { encoded[0] & 1 == 1 }

    static func == (a: FieldElement, b: FieldElement) -> Bool { a.encoded == b.encoded }
}

/// A point of edwards25519 in extended coordinates (X : Y : Z : T), x = X/Z, y = Y/Z, xy = T/Z.
struct Point {
    var x: FieldElement
    var y: FieldElement
    var z: FieldElement
    var t: FieldElement

    /// The neutral element.
    static let identity = Point(x: .zero, y: .one, z: .one, t: .zero)

    /// The base point B.
    static let base: Point = {
        let x = FieldElement([
            0xd51a, 0x8f25, 0x2d60, 0xc956, 0xa7b2, 0x9525, 0xc760, 0x692c, 0xdc5c, 0xfdd6, 0xe231, 0xc0a4, 0x53fe, 0xcd6e,
            0x36d3, 0x2169,
        ])
        let y = FieldElement([0x6658] + [Int64](repeating: 0x6666, count: 15))
        return Point(x: x, y: y, z: .one, t: x * y)
    }()

    /// −P for the point `bytes` encode (RFC 8032 5.1.3), or nil when they encode no point of
    /// the curve, or encode x = 0 with the sign bit set.
    static func decodeNegated(_ bytes: [UInt8]) -> Point? {
        let y = FieldElement(decoding: bytes)
        let one = FieldElement.one
        let y2 = y.squared
        let u = y2 - one                 // y² − 1
        let v = y2 * .d + one            // d·y² + 1
        let v2 = v.squared
        let v4 = v2.squared
        let v6 = v4 * v2
        // x = u·v³·(u·v⁷)^((p−5)/8)
        var x = (v6 * u * v).powerP58 * u * v * v * v
        if x.squared * v != u { x = x * .sqrtMinusOne }
        guard x.squared * v == u else { return nil }
        let signBit = bytes[31] >> 7 == 1
        if x.encoded.allSatisfy({ $0 == 0 }) && signBit { return nil }
        // The negation of the decoded point: x with the opposite sign.
        if x.isNegative == signBit { x = .zero - x }
        return Point(x: x, y: y, z: one, t: x * y)
    }

    /// P + Q (the unified addition of extended coordinates, complete on this curve).
    func adding(_ q: Point) -> Point {
        let a = (y - x) * (q.y - q.x)
        let b = (y + x) * (q.y + q.x)
        let c = t * q.t * .d2
        let d0 = z * q.z
        let d = d0 + d0
        let e = b - a
        let f = d - c
        let g = d + c
        let h = b + a
        return Point(x: e * f, y: h * g, z: g * f, t: e * h)
    }

    /// 2P, with the doubling formula of extended coordinates (4 squarings, 4 products).
    func doubled() -> Point {
        let a = x.squared
        let b = y.squared
        let zz = z.squared
        let c = zz + zz
        let h = a + b
        let sum = x + y
        let e = h - sum.squared
        let g = a - b
        let f = c + g
        return Point(x: e * f, y: g * h, z: f * g, t: e * h)
    }

    /// [0]P … [15]P, the table of a 4-bit window.
    var multiples: [Point] {
        var table = [Point.identity, self]
        for _ in 2..<16 { table.append(table[table.count - 1].adding(self)) }
        return table
    }

    /// [a]P + [b]Q for public 32-byte little-endian scalars, in one pass of doublings with
    /// 4-bit windows (verification: its inputs are public, so its time may depend on them).
    static func combination(_ a: [UInt8], _ p: Point, _ b: [UInt8], _ q: Point) -> Point {
        let pTable = p.multiples
        let qTable = q.multiples
        var result = Point.identity
        for nibble in stride(from: 63, through: 0, by: -1) {
            if nibble != 63 { result = result.doubled().doubled().doubled().doubled() }
            let shift = UInt8((nibble & 1) * 4)
            let aDigit = Int((a[nibble / 2] >> shift) & 15)
            let bDigit = Int((b[nibble / 2] >> shift) & 15)
            if aDigit != 0 { result = result.adding(pTable[aDigit]) }
            if bDigit != 0 { result = result.adding(qTable[bDigit]) }
        }
        return result
    }

    /// [s]P with the same operations whatever `s` is, for secret scalars: 4-bit windows, each
    /// multiple taken from a table of 16 by a branch-free scan of the whole table, and one
    /// addition per window (of the identity for a zero digit).
    func multipliedUniformly(by scalar: [UInt8]) -> Point {
        let multiples = self.multiples
        var result = Point.identity
        for nibble in stride(from: 63, through: 0, by: -1) {
            if nibble != 63 { result = result.doubled().doubled().doubled().doubled() }
            let digit = Int64((scalar[nibble / 2] >> UInt8((nibble & 1) * 4)) & 15)
            var chosen = Point.identity
            for (index, candidate) in multiples.enumerated() {
                var take = candidate
                // 1 when index == digit, else 0, without a branch on the digit.
                let difference = Int64(index) ^ digit
                let equal = ((difference | -difference) >> 63) + 1
                Point.swap(&chosen, &take, if: equal)
            }
            result = result.adding(chosen)
        }
        return result
    }

    /// Swaps `p` and `q` when `bit` is 1, with the same operations either way.
    private static func swap(_ p: inout Point, _ q: inout Point, if bit: Int64) {
        FieldElement.swap(&p.x, &q.x, if: bit)
        FieldElement.swap(&p.y, &q.y, if: bit)
        FieldElement.swap(&p.z, &q.z, if: bit)
        FieldElement.swap(&p.t, &q.t, if: bit)
    }

    /// The 32-byte encoding: y with the sign of x in the top bit.
    func encoded() -> [UInt8] {
        let zInverse = z.inverse
        let affineX = x * zInverse
        var out = (y * zInverse).encoded
        if affineX.isNegative { out[31] ^= 0x80 }
        return out
    }
}

/// Scalars modulo the group order L.
enum GroupScalar {
    /// (k·a + r) mod L for 32-byte little-endian scalars.
    static func multiplyAdd(_ k: [UInt8], _ a: [UInt8], _ r: [UInt8]) -> [UInt8] {
        var x = [Int64](repeating: 0, count: 64)
        for i in 0..<32 { x[i] = Int64(r[i]) }
        for i in 0..<32 {
            for j in 0..<32 { x[i + j] += Int64(k[i]) * Int64(a[j]) }
        }
        return reduce(limbs: x)
    }

    /// `wide` (a 64-byte little-endian integer, a SHA-512 digest) modulo L, as 32 bytes.
    static func reduce(_ wide: [UInt8]) -> [UInt8] { reduce(limbs: wide.map { Int64($0) }) }

    /// 64 limbs of a little-endian integer (each may exceed a byte) modulo L, as 32 bytes.
    private static func reduce(limbs: [Int64]) -> [UInt8] {
        var x = limbs
        let l = Ed25519.order.map { Int64($0) }
        for i in stride(from: 63, through: 32, by: -1) {
            var carry: Int64 = 0
            var j = i - 32
            while j < i - 12 {
                x[j] += carry - 16 * x[i] * l[j - (i - 32)]
                carry = (x[j] + 128) >> 8
                x[j] -= carry << 8
                j += 1
            }
            x[j] += carry
            x[i] = 0
        }
        var carry: Int64 = 0
        for j in 0..<32 {
            x[j] += carry - (x[31] >> 4) * l[j]
            carry = x[j] >> 8
            x[j] &= 255
        }
        for j in 0..<32 { x[j] -= carry * l[j] }
        var out = [UInt8](repeating: 0, count: 32)
        for i in 0..<32 {
            x[i + 1] += x[i] >> 8
            out[i] = UInt8(truncatingIfNeeded: x[i] & 255)
        }
        return out
    }
}
