/// Why bytes could not be read as JSON, and where.
package struct FlagJSONError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong.
    package enum Kind: Equatable, Sendable {
        /// The input ended inside a value.
        case unexpectedEnd
        /// A byte that cannot start or continue a value here.
        case unexpectedByte(UInt8)
        /// A string is not valid UTF-8.
        case invalidUTF8
        /// A backslash escape is malformed or names a lone surrogate.
        case invalidEscape
        /// A raw control character (below U+0020) inside a string.
        case controlCharacter
        /// A number that no `Double` can hold.
        case numberOutOfRange
        /// Arrays and objects nest deeper than the limit.
        case tooDeep(limit: Int)
        /// The same member name twice in one object.
        case duplicateKey(String)
        /// Non-whitespace after the value.
        case trailingData
        /// Nothing but whitespace.
        case empty
    }

    /// What went wrong.
    package let kind: Kind
    /// Byte offset in the input where it was noticed.
    package let offset: Int
    /// The line (from 1) of ``offset``; nil for an error made with ``init(_:at:)``.
    package private(set) var line: Int?
    /// The column (from 1, in characters) of ``offset`` on its line, with ``line``.
    package private(set) var column: Int?

    /// Creates an error of `kind` at byte `offset`.
    package init(_ kind: Kind, at offset: Int) {
        self.kind = kind
        self.offset = offset
    }

    /// This error with the line and column of its offset in `bytes`, the input it was found in.
    func located(in bytes: UnsafeBufferPointer<UInt8>) -> FlagJSONError {
        var line = 1
        var column = 1
        let end = min(offset, bytes.count)
        var index = 0
        while index < end {
            let byte = bytes[index]
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1  // one per character: UTF-8 continuation bytes do not count
            }
            index += 1
        }
        var located = self
        located.line = line
        located.column = column
        return located
    }

    /// One line for logs and events.
    package var description: String {
        let what: String
        switch kind {
        case .unexpectedEnd: what = "unexpected end of input"
        case .unexpectedByte(let b): what = "unexpected byte 0x" + String(b, radix: 16)
        case .invalidUTF8: what = "invalid UTF-8 in string"
        case .invalidEscape: what = "invalid escape in string"
        case .controlCharacter: what = "control character in string"
        case .numberOutOfRange: what = "number out of range"
        case .tooDeep(let limit): what = "nesting deeper than \(limit)"
        case .duplicateKey(let key): what = "duplicate key \"\(key)\""
        case .trailingData: what = "data after the JSON value"
        case .empty: what = "empty input"
        }
        guard let line, let column else { return "JSON \(what) at byte \(offset)" }
        return "JSON \(what) at line \(line), column \(column) (byte \(offset))"
    }
}
