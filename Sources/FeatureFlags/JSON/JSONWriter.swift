/// Writes ``FlagValue`` as compact JSON; doubles keep a fraction (`1.0`), non-finite ones become `null`.
struct JSONWriter {
    private(set) var bytes: [UInt8] = []
    let sortedKeys: Bool

    init(sortedKeys: Bool, capacity: Int = 256) {
        self.sortedKeys = sortedKeys
        bytes.reserveCapacity(capacity)
    }

    mutating func write(_ value: FlagValue) {
        switch value {
        case .null: append("null")
        case .bool(let b): append(b ? "true" : "false")
        case .int(let i): append(String(i))
        case .double(let d): writeDouble(d)
        case .string(let s): writeString(s)
        case .list(let items):
            bytes.append(UInt8(ascii: "["))
            for (n, item) in items.enumerated() {
                if n > 0 { bytes.append(UInt8(ascii: ",")) }
                write(item)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            var first = true
            let keys = sortedKeys ? members.keys.sorted() : Array(members.keys)
            for key in keys {
                guard let member = members[key] else { continue }
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                writeString(key)
                bytes.append(UInt8(ascii: ":"))
                write(member)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    private mutating func append(_ text: String) { bytes.append(contentsOf: text.utf8) }

    private mutating func writeDouble(_ d: Double) {
        guard d.isFinite else { append("null"); return }
        // Swift's description is the shortest text that round-trips; "1.0" keeps its fraction.
        append(d.description)
    }

    mutating func writeString(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): append("\\\"")
            case UInt8(ascii: "\\"): append("\\\\")
            case 0x0A: append("\\n")
            case 0x0D: append("\\r")
            case 0x09: append("\\t")
            case 0..<0x20:
                append("\\u00")
                bytes.append(Self.hexDigit(b >> 4))
                bytes.append(Self.hexDigit(b & 0xF))
            default: bytes.append(b)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static func hexDigit(_ n: UInt8) -> UInt8 { n < 10 ? UInt8(ascii: "0") + n : UInt8(ascii: "a") + n - 10 }
}
