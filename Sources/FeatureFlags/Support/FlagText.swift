package import Foundation

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

    /// At most 48 characters: longer text is cut to 45 and `…`.
    package static func clip(_ text: String) -> String {
        let safe = printable(text)
        return safe.count > 48 ? String(safe.prefix(45)) + "…" : safe
    }

    /// `12s`, `4m`, `3h`, `2d`; `-` for none.
    package static func age(_ seconds: TimeInterval?) -> String {
        guard let seconds else { return "-" }
        let s = seconds.roundedClampedToInt
        if s < 120 { return "\(s)s" }
        if s < 7_200 { return "\(s / 60)m" }
        if s < 172_800 { return "\(s / 3_600)h" }
        return "\(s / 86_400)d"
    }

    /// Left-aligned columns, two spaces apart; the last column is not padded.
    package static func columns(_ rows: [[String]]) -> [String] {
        guard let width = rows.map(\.count).max() else { return [] }
        var widths = [Int](repeating: 0, count: width)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        return rows.map { row in
            row.enumerated().map { i, cell in i == row.count - 1 ? cell : cell.padding(toLength: widths[i], withPad: " ", startingAt: 0) }
                .joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
    }
}
