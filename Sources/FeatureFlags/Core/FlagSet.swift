/// A snapshot's flags as a dictionary and a read table, each built lazily from the other; both always hold the same flags.
package final class FlagSet: Sendable {
    private struct Forms {
        var dictionary: [String: FlagEntry]?
        var table: FlagTable?
    }

    private let forms: Locked<Forms>

    /// The flags of `dictionary`.
    package init(_ dictionary: [String: FlagEntry]) { forms = Locked(Forms(dictionary: dictionary, table: nil)) }

    /// The flags of `table` (every slot of which is the snapshot's).
    package init(table: FlagTable) { forms = Locked(Forms(dictionary: nil, table: table)) }

    /// The flags by name.
    package var dictionary: [String: FlagEntry] {
        if let dictionary = forms.withLock({ $0.dictionary }) { return dictionary }
        let table = self.table
        // Built outside the lock; two threads racing build the same dictionary and one wins.
        let built = table.dictionary()
        return forms.withLock { forms in
            if let dictionary = forms.dictionary { return dictionary }
            forms.dictionary = built
            return built
        }
    }

    /// The flags as reads look them up.
    package var table: FlagTable {
        let (table, dictionary) = forms.withLock { ($0.table, $0.dictionary) }
        if let table { return table }
        let built = FlagTable(snapshot: dictionary ?? [:], defaults: [:])
        return forms.withLock { forms in
            if let table = forms.table { return table }
            forms.table = built
            return built
        }
    }

    /// The flags over `defaults` (a flag of the set wins), as reads look them up.
    package func table(over defaults: [String: FlagEntry]) -> FlagTable {
        if defaults.isEmpty { return table }
        let (table, dictionary) = forms.withLock { ($0.table, $0.dictionary) }
        if let table { return FlagTable(table, over: defaults) }
        return FlagTable(snapshot: dictionary ?? [:], defaults: defaults)
    }

    /// The entry of `name`, from whichever form exists.
    package func entry(_ name: String) -> FlagEntry? {
        let (table, dictionary) = forms.withLock { ($0.table, $0.dictionary) }
        if let dictionary { return dictionary[name] }
        return table?.entry(name)
    }

    /// Whether both hold the same flags (as tables unless both have dictionaries: tables are cheaper to build).
    package func sameEntries(as other: FlagSet) -> Bool {
        if self === other { return true }
        let mine = forms.withLock { $0.dictionary }
        let theirs = other.forms.withLock { $0.dictionary }
        if let mine, let theirs { return mine == theirs }
        return table.sameEntries(as: other.table)
    }
}
