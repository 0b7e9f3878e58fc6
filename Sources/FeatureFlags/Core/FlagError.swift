/// What went wrong, as OpenFeature codes it: the one error type of the library's calls that can
/// fail on their own terms — an endpoint that cannot build a request or read an answer
/// (`PARSE_ERROR`, `INVALID_CONTEXT` …), a failed lookup a hook's `error` stage is told about
/// (`FLAG_NOT_FOUND`, `TYPE_MISMATCH` …) or a hook stage that threw (`GENERAL`), a schema that
/// cannot be used (`PARSE_ERROR`), a fallback file that could not be written (`GENERAL`), an
/// override that could not be set, cleared or loaded (``FlagOverrides``). A fetch fails with
/// ``FetchError`` (its kinds are the network's).
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

    /// `CODE: message`, on one line: control characters in the message (it may quote a
    /// service's text) are escaped as `\u{…}`.
    public var description: String { FlagText.printable("\(code.rawValue): \(message)") }
}
