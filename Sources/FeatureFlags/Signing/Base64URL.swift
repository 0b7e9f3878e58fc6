import Foundation

/// Unpadded base64url (RFC 4648 §5), as JWS (RFC 7515) uses; strict decoding: no padding, zero unused tail bits.
package enum Base64URL {
    /// The unpadded base64url text of `bytes`.
    package static func encode(_ bytes: [UInt8]) -> String {
        String(Data(bytes).base64EncodedString().compactMap { c -> Character? in c == "+" ? "-" : c == "/" ? "_" : c == "=" ? nil : c })
    }

    /// The bytes `text` encodes, or nil unless strict unpadded base64url. Non-generic on purpose.
    package static func decode(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        guard text.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(text.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in text {
            let value: UInt8
            switch character {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = character - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = character - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = character - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "_"): value = 63
            default: return nil
            }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        guard accumulator == 0 else { return nil }
        return out
    }

    /// ``decode(_:)`` of whole bytes.
    package static func decode(_ text: [UInt8]) -> [UInt8]? { decode(text[...]) }

    /// ``decode(_:)`` of a string.
    package static func decode(_ text: String) -> [UInt8]? { decode(Array(text.utf8)[...]) }
}
