/// A failure with its OpenFeature code, thrown by the library's calls (fetches throw ``FetchError`` instead).
public struct FlagError: Error, Hashable, Sendable, CustomStringConvertible {
    /// OpenFeature's code for the failure: `PARSE_ERROR`, `INVALID_CONTEXT`, `GENERAL` …
    public let code: FlagErrorCode
    /// What was wrong, without context attribute values or secrets.
    public let message: String

    /// An error with `code` and `message`.
    public init(_ code: FlagErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `CODE: message` on one line, control characters escaped as `\u{…}`.
    public var description: String { FlagText.printable("\(code.rawValue): \(message)") }
}
