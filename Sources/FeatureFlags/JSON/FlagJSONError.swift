/// Why bytes could not be read as JSON, and where.
public struct FlagJSONError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: Equatable, Sendable {
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
    public let kind: Kind
    /// Byte offset in the input where it was noticed.
    public let offset: Int

    /// Creates an error of `kind` at byte `offset`.
    public init(_ kind: Kind, at offset: Int) {
        self.kind = kind
        self.offset = offset
    }

    /// One line for logs and events.
    public var description: String {
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
        return "JSON \(what) at byte \(offset)"
    }
}
