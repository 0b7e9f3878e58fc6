/// The rule for header fields a request sends (RFC 9110 §5.1, §5.5): a name is a token, a value
/// holds no control character but a tab. URLSession does not refuse a field that breaks it: on
/// Linux a value with a line break is dropped from the request without a word, so an API key
/// read from a file with its trailing newline reached the service as no key at all, and the
/// answer was a 401 that said nothing of why.
package enum HeaderFieldCheck {
    /// The name of the first field of `fields` that breaks the rule (the first by name, so the
    /// answer is the same every time), or nil. The value is never named: it may be a secret.
    static func firstMalformed(_ fields: [String: String]) -> String? {
        fields.lazy.filter { !isToken($0.key) || !isFieldValue($0.value) }.map(\.key).min()
    }

    /// Why the first field of `fields` that breaks the rule cannot be sent, naming the field and
    /// never its value; nil when every field keeps the rule.
    static func problem(in fields: [String: String]) -> String? {
        guard let malformed = firstMalformed(fields) else { return nil }
        let why =
            isToken(malformed)
            ? "its value holds a line break or another control character (a key read with its trailing newline?)"
            : "its name is not a token (letters, digits, !#$%&'*+-.^_`|~)"
        return "header field \"\(FlagText.printable(malformed))\" is not sent as written: \(why)"
    }

    /// A token (`tchar`): letters, digits and ``!#$%&'*+-.^_`|~``, at least one.
    package static func isToken(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"): return true
            case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
                 UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): return true
            default: return false
            }
        }
    }

    /// Visible characters, spaces, tabs and any byte from 0x80 on; no CR, LF, NUL or other
    /// control character, no DEL.
    package static func isFieldValue(_ value: String) -> Bool {
        value.utf8.allSatisfy { byte in byte == 0x09 || (byte >= 0x20 && byte != 0x7F) }
    }
}
