/// Strict UTF-8 validation (Unicode 15, table 3-7): no overlongs, no surrogates, nothing above U+10FFFF.
enum UTF8Validation {
    /// Whether `bytes[start..<end]` is well-formed UTF-8.
    static func isValid(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int) -> Bool {
        var i = start
        while i < end {
            let b0 = bytes[i]
            if b0 < 0x80 { i += 1; continue }
            let need: Int
            var lo: UInt8 = 0x80, hi: UInt8 = 0xBF
            switch b0 {
            case 0xC2...0xDF: need = 1
            case 0xE0: need = 2; lo = 0xA0
            case 0xE1...0xEC, 0xEE, 0xEF: need = 2
            case 0xED: need = 2; hi = 0x9F
            case 0xF0: need = 3; lo = 0x90
            case 0xF1...0xF3: need = 3
            case 0xF4: need = 3; hi = 0x8F
            default: return false
            }
            if end - i <= need { return false }
            let b1 = bytes[i + 1]
            if b1 < lo || b1 > hi { return false }
            var k = 2
            while k <= need {
                if bytes[i + k] & 0xC0 != 0x80 { return false }
                k += 1
            }
            i += need + 1
        }
        return true
    }
}
