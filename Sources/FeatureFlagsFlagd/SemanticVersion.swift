import FeatureFlags

/// A semantic version (semver.org 2.0.0) as flagd's `sem_ver` reads it: an optional leading
/// `v` or `V`, `MAJOR`, `MAJOR.MINOR` or `MAJOR.MINOR.PATCH` (missing parts are zero; the short forms
/// take no pre-release or build), numeric parts without leading zeros, an optional
/// `-pre.release` and an optional `+build` that comparisons ignore. Numbers may have any
/// number of digits, as in flagd's Go evaluator (`golang.org/x/mod/semver` compares them as
/// digit strings): `v18446744073709551616` is a version, greater than `v18446744073709551615`.
struct SemanticVersion: Sendable, Equatable {
    /// `MAJOR`, `MINOR` and `PATCH` as their digits (`"0"` where the short forms leave one out).
    let major: Substring
    let minor: Substring
    let patch: Substring
    /// Dot-separated pre-release identifiers; empty for a release.
    let prerelease: [Substring]

    /// Parses `text`; nil when it is not a version.
    init?(_ text: String) {
        var rest = Substring(text)
        if rest.first == "v" || rest.first == "V" { rest = rest.dropFirst() }
        var build: Substring?
        if let plus = rest.firstIndex(of: "+") {
            build = rest[rest.index(after: plus)...]
            rest = rest[..<plus]
        }
        var pre: Substring?
        if let dash = rest.firstIndex(of: "-") {
            pre = rest[rest.index(after: dash)...]
            rest = rest[..<dash]
        }
        let core = rest.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...3).contains(core.count) else { return nil }
        if core.count < 3, pre != nil || build != nil { return nil }
        guard core.allSatisfy(Self.isNumber) else { return nil }
        let numbers = core + Array(repeating: "0", count: 3 - core.count)
        if let build {
            let identifiers = build.split(separator: ".", omittingEmptySubsequences: false)
            guard identifiers.allSatisfy(Self.isIdentifier) else { return nil }
        }
        var prerelease: [Substring] = []
        if let pre {
            prerelease = pre.split(separator: ".", omittingEmptySubsequences: false)
            for identifier in prerelease {
                guard Self.isIdentifier(identifier) else { return nil }
                if identifier.allSatisfy(\.isASCIIDigit), identifier.count > 1, identifier.first == "0" { return nil }
            }
        }
        (major, minor, patch) = (numbers[0], numbers[1], numbers[2])
        self.prerelease = prerelease
    }

    /// Digits without a leading zero (`0` itself is one).
    private static func isNumber(_ part: Substring) -> Bool {
        !part.isEmpty && part.allSatisfy(\.isASCIIDigit) && (part.count == 1 || part.first != "0")
    }

    /// Orders two numbers written without leading zeros, of any length: the longer is greater,
    /// and of equal lengths the digits decide.
    private static func compareNumbers(_ a: Substring, _ b: Substring) -> Int {
        if a.count != b.count { return a.count < b.count ? -1 : 1 }
        return a == b ? 0 : (a < b ? -1 : 1)
    }

    private static func isIdentifier(_ part: Substring) -> Bool {
        !part.isEmpty && part.allSatisfy { $0.isASCIIDigit || $0.isASCIILetter || $0 == "-" }
    }

    /// Precedence (semver §11): -1, 0 or 1. Build metadata is ignored.
    func compare(_ other: SemanticVersion) -> Int {
        for (a, b) in [(major, other.major), (minor, other.minor), (patch, other.patch)] where a != b {
            return Self.compareNumbers(a, b)
        }
        switch (prerelease.isEmpty, other.prerelease.isEmpty) {
        case (true, true): return 0
        case (true, false): return 1
        case (false, true): return -1
        case (false, false): break
        }
        for (a, b) in zip(prerelease, other.prerelease) where a != b {
            // Numeric identifiers (no leading zero: checked at parsing) sort below the others.
            switch (a.allSatisfy(\.isASCIIDigit), b.allSatisfy(\.isASCIIDigit)) {
            case (true, true): return Self.compareNumbers(a, b)
            case (true, false): return -1
            case (false, true): return 1
            case (false, false): return a < b ? -1 : 1
            }
        }
        return prerelease.count == other.prerelease.count ? 0 : (prerelease.count < other.prerelease.count ? -1 : 1)
    }

    /// `sem_ver`'s operators: `=`, `!=`, `<`, `<=`, `>`, `>=`, `~` (same major and minor),
    /// `^` (same major). Nil for an unknown operator.
    func matches(_ operation: String, _ other: SemanticVersion) -> Bool? {
        switch operation {
        case "=": return compare(other) == 0
        case "!=": return compare(other) != 0
        case "<": return compare(other) < 0
        case "<=": return compare(other) <= 0
        case ">": return compare(other) > 0
        case ">=": return compare(other) >= 0
        case "~": return major == other.major && minor == other.minor
        case "^": return major == other.major
        default: return nil
        }
    }
}

extension Character {
    /// `a`…`z`, `A`…`Z` only (as the core's `isASCIIDigit`: a letter with a combining mark is
    /// one `Character` that sorts inside the range).
    fileprivate var isASCIILetter: Bool { utf8.count == 1 && (("a"..."z").contains(self) || ("A"..."Z").contains(self)) }
}
