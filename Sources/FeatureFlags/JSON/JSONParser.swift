/// Strict RFC 8259 parser into ``FlagValue``: keeps number form, rejects bad UTF-8, duplicate keys, deep nesting; never traps.
struct JSONParser {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var depth = 0
    private let maxDepth: Int

    init(bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    /// Parses exactly one value surrounded by optional whitespace.
    mutating func parseDocument() throws(FlagJSONError) -> FlagValue {
        skipWhitespace()
        if index >= bytes.count { throw FlagJSONError(.empty, at: index) }
        let value = try parseValue()
        skipWhitespace()
        if index < bytes.count { throw FlagJSONError(.trailingData, at: index) }
        return value
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    private func fail(_ kind: FlagJSONError.Kind) -> FlagJSONError { FlagJSONError(kind, at: index) }

    private func peek() throws(FlagJSONError) -> UInt8 {
        guard index < bytes.count else { throw fail(.unexpectedEnd) }
        return bytes[index]
    }

    private mutating func parseValue() throws(FlagJSONError) -> FlagValue {
        switch try peek() {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseList()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectWord("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectWord("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectWord("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        case let other: throw fail(.unexpectedByte(other))
        }
    }

    private mutating func expectWord(_ word: StaticString) throws(FlagJSONError) {
        let count = word.utf8CodeUnitCount
        let base = word.utf8Start
        for k in 0..<count {
            guard index < bytes.count else { throw fail(.unexpectedEnd) }
            guard bytes[index] == base[k] else { throw fail(.unexpectedByte(bytes[index])) }
            index += 1
        }
    }

    /// Enters a list or object at its opening byte; true when `close` ends it at once.
    private mutating func open(closedBy close: UInt8) throws(FlagJSONError) -> Bool {
        depth += 1
        if depth > maxDepth { throw fail(.tooDeep(limit: maxDepth)) }
        index += 1
        skipWhitespace()
        guard try peek() == close else { return false }
        index += 1
        depth -= 1
        return true
    }

    /// After a member: true past a `,` (another follows), false past `close` (the end).
    private mutating func another(before close: UInt8) throws(FlagJSONError) -> Bool {
        skipWhitespace()
        let b = try peek()
        guard b == UInt8(ascii: ",") || b == close else { throw fail(.unexpectedByte(b)) }
        index += 1
        if b == close { depth -= 1 }
        return b != close
    }

    private mutating func parseList() throws(FlagJSONError) -> FlagValue {
        var items: [FlagValue] = []
        if try open(closedBy: UInt8(ascii: "]")) { return .list(items) }
        repeat {
            skipWhitespace()
            items.append(try parseValue())
        } while try another(before: UInt8(ascii: "]"))
        return .list(items)
    }

    private mutating func parseObject() throws(FlagJSONError) -> FlagValue {
        var members: [String: FlagValue] = [:]
        if try open(closedBy: UInt8(ascii: "}")) { return .object(members) }
        repeat {
            skipWhitespace()
            let keyStart = index
            let b = try peek()
            guard b == UInt8(ascii: "\"") else { throw fail(.unexpectedByte(b)) }
            let key = try parseString()
            skipWhitespace()
            let colon = try peek()
            guard colon == UInt8(ascii: ":") else { throw fail(.unexpectedByte(colon)) }
            index += 1
            skipWhitespace()
            let value = try parseValue()
            if members.updateValue(value, forKey: key) != nil {
                throw FlagJSONError(.duplicateKey(key), at: keyStart)
            }
        } while try another(before: UInt8(ascii: "}"))
        return .object(members)
    }

    /// Parses a string starting at the opening quote.
    mutating func parseString() throws(FlagJSONError) -> String {
        index += 1
        let start = index
        var sawHighBit = false
        while index < bytes.count {
            let b = bytes[index]
            if b == UInt8(ascii: "\"") {
                if sawHighBit, !UTF8Validation.isValid(bytes, from: start, to: index) {
                    throw FlagJSONError(.invalidUTF8, at: start)
                }
                let s = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                index += 1
                return s
            }
            if b == UInt8(ascii: "\\") { return try parseEscapedString(from: start) }
            if b < 0x20 { throw fail(.controlCharacter) }
            if b >= 0x80 { sawHighBit = true }
            index += 1
        }
        throw fail(.unexpectedEnd)
    }

    private mutating func parseEscapedString(from start: Int) throws(FlagJSONError) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(index - start + 16)
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let b = bytes[index]
            switch b {
            case UInt8(ascii: "\""):
                index += 1
                let valid = out.withUnsafeBufferPointer { UTF8Validation.isValid($0, from: 0, to: $0.count) }
                guard valid else { throw FlagJSONError(.invalidUTF8, at: start) }
                return String(decoding: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail(.unexpectedEnd) }
                let e = bytes[index]
                index += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"): UTF8.encode(try parseUnicodeEscape()) { out.append($0) }
                default:
                    index -= 1
                    throw fail(.invalidEscape)
                }
            default:
                if b < 0x20 { throw fail(.controlCharacter) }
                out.append(b)
                index += 1
            }
        }
        throw fail(.unexpectedEnd)
    }

    private mutating func hex4() throws(FlagJSONError) -> UInt32 {
        guard bytes.count - index >= 4 else { throw fail(.unexpectedEnd) }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[index]
            let d: UInt32
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(c - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(c - UInt8(ascii: "A") + 10)
            default: throw fail(.invalidEscape)
            }
            v = v << 4 | d
            index += 1
        }
        return v
    }

    /// After `\u`: one escape, or a surrogate pair of two.
    private mutating func parseUnicodeEscape() throws(FlagJSONError) -> Unicode.Scalar {
        let first = try hex4()
        if (0xDC00...0xDFFF).contains(first) { throw fail(.invalidEscape) }
        if (0xD800...0xDBFF).contains(first) {
            guard bytes.count - index >= 2, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { throw fail(.invalidEscape) }
            index += 2
            let second = try hex4()
            guard (0xDC00...0xDFFF).contains(second) else { throw fail(.invalidEscape) }
            let combined = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            guard let scalar = Unicode.Scalar(combined) else { throw fail(.invalidEscape) }
            return scalar
        }
        guard let scalar = Unicode.Scalar(first) else { throw fail(.invalidEscape) }
        return scalar
    }

    private mutating func parseNumber() throws(FlagJSONError) -> FlagValue {
        let start = index
        var negative = false
        if bytes[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        guard index < bytes.count else { throw fail(.unexpectedEnd) }
        let firstDigit = bytes[index]
        guard isDigit(firstDigit) else { throw fail(.unexpectedByte(firstDigit)) }
        var magnitude: UInt64 = 0
        var overflow = false
        if firstDigit == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) {
                let (m1, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (m2, o2) = m1.addingReportingOverflow(UInt64(bytes[index] - UInt8(ascii: "0")))
                overflow = overflow || o1 || o2
                magnitude = m2
                index += 1
            }
        }
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            try digits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            try digits()
        }
        if isInteger, !overflow {
            if negative, magnitude <= UInt64(Int.max) + 1 {
                return .int(magnitude == UInt64(Int.max) + 1 ? Int.min : -Int(magnitude))
            }
            if !negative, magnitude <= UInt64(Int.max) { return .int(Int(magnitude)) }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let d = Double(text), d.isFinite else { throw FlagJSONError(.numberOutOfRange, at: start) }
        return .double(d)
    }

    private mutating func digits() throws(FlagJSONError) {
        guard index < bytes.count else { throw fail(.unexpectedEnd) }
        guard isDigit(bytes[index]) else { throw fail(.unexpectedByte(bytes[index])) }
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
    }

    private func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }
}
