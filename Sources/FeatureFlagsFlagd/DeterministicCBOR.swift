import FeatureFlags

/// The bytes flagd's accepted fractional-hashing ADR ("Harden hashing consistency and add
/// support for non-string attributes in fractional evaluation") hashes: a value encoded as
/// deterministic CBOR (RFC 8949 §4.2.1, Core Deterministic Encoding, with Preferred
/// Serialization), after the ADR's number normalisation.
///
/// - `null` → simple value 22; Booleans → simple values 20 and 21.
/// - Integers → major type 0 (≥ 0) or 1 (< 0), in the shortest argument form.
/// - Numbers with a fractional part are floats (major type 7) in the shortest of half, single
///   and double precision that holds the value exactly. A float without a fractional part in
///   [−2⁶³, 2⁶⁴ − 1] is first normalised to an integer (−0.0 to 0); beyond that range it stays
///   a float.
/// - Text → major type 3 (UTF-8); lists → major type 4; objects → major type 5, their entries
///   sorted by the bytewise order of their encoded keys.
///
/// NaN and infinities (which JSON cannot carry) are encoded as half-precision floats; the ADR
/// calls them undefined behaviour.
enum DeterministicCBOR {
    /// The encoding of `value`.
    static func encode(_ value: FlagValue) -> [UInt8] {
        var bytes: [UInt8] = []
        append(value, to: &bytes)
        return bytes
    }

    private static func append(_ value: FlagValue, to bytes: inout [UInt8]) {
        switch value {
        case .null: bytes.append(0xf6)
        case .bool(let on): bytes.append(on ? 0xf5 : 0xf4)
        case .int(let whole): appendInteger(Int64(whole), to: &bytes)
        case .double(let number): appendNumber(number, to: &bytes)
        case .string(let text):
            appendHead(major: 3, UInt64(text.utf8.count), to: &bytes)
            bytes.append(contentsOf: text.utf8)
        case .list(let items):
            appendHead(major: 4, UInt64(items.count), to: &bytes)
            for item in items { append(item, to: &bytes) }
        case .object(let members):
            appendHead(major: 5, UInt64(members.count), to: &bytes)
            let entries = members.map { key, value -> (key: [UInt8], value: FlagValue) in
                var encoded: [UInt8] = []
                appendHead(major: 3, UInt64(key.utf8.count), to: &encoded)
                encoded.append(contentsOf: key.utf8)
                return (encoded, value)
            }
            // Indices sorted (one sort of `Int`s serves the library), by the encoded keys.
            for index in entries.indices.sorted(by: { entries[$0].key.lexicographicallyPrecedes(entries[$1].key) }) {
                bytes.append(contentsOf: entries[index].key)
                append(entries[index].value, to: &bytes)
            }
        }
    }

    private static func appendInteger(_ whole: Int64, to bytes: inout [UInt8]) {
        if whole >= 0 {
            appendHead(major: 0, UInt64(whole), to: &bytes)
        } else {
            // −1 − n, computed without overflow for Int64.min.
            appendHead(major: 1, UInt64(bitPattern: -(whole + 1)), to: &bytes)
        }
    }

    private static func appendNumber(_ number: Double, to bytes: inout [UInt8]) {
        // The ADR's normalisation: a whole number in [−2⁶³, 2⁶⁴ − 1] is an integer.
        if number.isFinite, number == number.rounded(.towardZero) {
            // 2⁶⁴ − 1 is not a double: every whole double below 2⁶⁴ is at most 2⁶⁴ − 1.
            if number >= 0, number < 18_446_744_073_709_551_616.0 {
                appendHead(major: 0, UInt64(number), to: &bytes)
                return
            } else if number < 0, number >= -9_223_372_036_854_775_808 {
                appendInteger(Int64(number), to: &bytes)
                return
            }
        }
        appendFloat(number, to: &bytes)
    }

    /// Preferred serialisation: the shortest of half, single and double precision that keeps
    /// the value exactly.
    private static func appendFloat(_ number: Double, to bytes: inout [UInt8]) {
        if let half = halfBits(number) {
            bytes.append(0xf9)
            bytes.append(UInt8(half >> 8))
            bytes.append(UInt8(half & 0xff))
            return
        }
        let single = Float(number)
        if Double(single) == number {
            bytes.append(0xfa)
            let bits = single.bitPattern
            for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8((bits >> UInt32(shift)) & 0xff)) }
            return
        }
        bytes.append(0xfb)
        let bits = number.bitPattern
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((bits >> UInt64(shift)) & 0xff)) }
    }

    /// The IEEE 754 half-precision bits of `number` when it holds it exactly (NaN as the
    /// canonical quiet NaN, infinities), else nil.
    static func halfBits(_ number: Double) -> UInt16? {
        if number.isNaN { return 0x7e00 }
        if number.isInfinite { return number < 0 ? 0xfc00 : 0x7c00 }
        let sign: UInt16 = number.sign == .minus ? 0x8000 : 0
        let magnitude = abs(number)
        if magnitude == 0 { return sign }
        // Normal halves: 2⁻¹⁴ ≤ x ≤ 65504, 10 fraction bits.
        let exponent = magnitude.exponent
        if exponent >= -14, exponent <= 15 {
            let fraction = magnitude.significand - 1   // in [0, 1)
            let scaled = fraction * 1024
            guard scaled == scaled.rounded(.towardZero) else { return nil }
            return sign | UInt16(exponent + 15) << 10 | UInt16(scaled)
        }
        // Subnormal halves: multiples of 2⁻²⁴ below 2⁻¹⁴.
        if exponent < -14 {
            let units = magnitude * 16_777_216   // × 2²⁴
            guard units == units.rounded(.towardZero), units < 1024 else { return nil }
            return sign | UInt16(units)
        }
        return nil
    }

    /// A head: the major type in the top three bits, the argument in the shortest form.
    private static func appendHead(major: UInt8, _ argument: UInt64, to bytes: inout [UInt8]) {
        let type = major << 5
        switch argument {
        case 0..<24:
            bytes.append(type | UInt8(argument))
        case 24...0xff:
            bytes.append(type | 24)
            bytes.append(UInt8(argument))
        case 0x100...0xffff:
            bytes.append(type | 25)
            bytes.append(UInt8(argument >> 8))
            bytes.append(UInt8(argument & 0xff))
        case 0x1_0000...0xffff_ffff:
            bytes.append(type | 26)
            for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8((argument >> UInt64(shift)) & 0xff)) }
        default:
            bytes.append(type | 27)
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8((argument >> UInt64(shift)) & 0xff)) }
        }
    }
}
