import FeatureFlags

/// The demo's layout: titles clipped and explanations wrapped to the terminal's width.
extension FlagText {
    /// ``printable(_:)`` text in at most `width` characters: longer text ends in `…`.
    static func clip(_ text: String, to width: Int) -> String {
        let safe = printable(text)
        return safe.count > width ? String(safe.prefix(max(0, width - 1))) + "…" : safe
    }

    /// ``printable(_:)`` text broken into lines of at most `width` characters, at spaces;
    /// a word longer than a line is cut.
    static func wrap(_ text: String, width: Int) -> [String] {
        let width = max(1, width)
        var lines: [String] = []
        var line = ""
        for word in printable(text).split(separator: " ", omittingEmptySubsequences: true) {
            var word = Substring(word)
            if !line.isEmpty, line.count + 1 + word.count <= width {
                line += " " + word
                continue
            }
            if !line.isEmpty { lines.append(line) }
            while word.count > width {
                lines.append(String(word.prefix(width)))
                word = word.dropFirst(width)
            }
            line = String(word)
        }
        if !line.isEmpty || lines.isEmpty { lines.append(line) }
        return lines
    }
}
