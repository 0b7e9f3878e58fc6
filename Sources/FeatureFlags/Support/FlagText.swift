import Foundation

/// Text for terminals, logs and debug screens, escaped so server or file text cannot move a cursor or forge a line.
package enum FlagText {
    /// `text` with control characters (ESC, CR, LF, DEL, C1 …) as `\u{…}` escapes.
    package static func printable(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.count)
        for scalar in text.unicodeScalars {
            if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
