import FeatureFlags
package import Foundation

/// The inspector's and `flagctl`'s table text: clipped values, short ages, aligned columns.
extension FlagText {
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
