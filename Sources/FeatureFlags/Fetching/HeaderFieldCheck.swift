/// Header field rule (RFC 9110 §5.1, §5.5), checked since URLSession on Linux silently drops a value with a line break.
package enum HeaderFieldCheck {
    /// The least name of a field breaking the rule, or nil; never the value, which may be secret.
    static func firstMalformed(_ fields: [String: String]) -> String? {
        fields.lazy.filter { !isToken($0.key) || !isFieldValue($0.value) }.map(\.key).min()
    }

    /// Why the first bad field cannot be sent, naming it but never its value; nil if none.
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
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }

    /// No control character (CR, LF, NUL…) but tab, and no DEL.
    package static func isFieldValue(_ value: String) -> Bool {
        value.utf8.allSatisfy { byte in byte == 0x09 || (byte >= 0x20 && byte != 0x7F) }
    }
}
