public import Foundation

/// An app version `X.Y.Z[.a]` (as in `CFBundleVersion`; missing parts 0), ordered by component, a missing build as 0.
public struct AppVersion: Sendable, Hashable, Comparable, CustomStringConvertible, LosslessStringConvertible {
    /// X.
    public let major: Int
    /// Y.
    public let minor: Int
    /// Z.
    public let patch: Int
    /// a, when given.
    public let build: Int?

    /// A version from its numbers (negative numbers are raised to 0).
    public init(major: Int, minor: Int, patch: Int, build: Int? = nil) {
        self.major = max(0, major)
        self.minor = max(0, minor)
        self.patch = max(0, patch)
        self.build = build.map { max(0, $0) }
    }

    /// Parses `X`, `X.Y`, `X.Y.Z` or `X.Y.Z.a` (ASCII digits, at most 9 per part); nil otherwise, e.g. `1.2.3-beta`.
    public init?(_ text: String) {
        // One pass over the bytes (a split would add its own specialised copy to every app).
        var numbers: [Int] = []
        var current = 0
        var digits = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: "."), digits > 0, numbers.count < 3 {
                numbers.append(current)
                (current, digits) = (0, 0)
            } else if (48...57).contains(byte), digits < 9 {
                current = current * 10 + Int(byte - 48)
                digits += 1
            } else {
                return nil
            }
        }
        guard digits > 0 else { return nil }
        numbers.append(current)
        while numbers.count < 3 { numbers.append(0) }
        self.init(major: numbers[0], minor: numbers[1], patch: numbers[2], build: numbers.count == 4 ? numbers[3] : nil)
    }

    /// The version the bundle values describe: `CFBundleVersion` if it is `X.Y.Z[.a]`; else
    /// `CFBundleShortVersionString` with a plain-number `CFBundleVersion` as build; else either that parses.
    public static func from(bundleVersion: String?, shortVersion: String?) -> AppVersion? {
        if let text = bundleVersion, text.utf8.reduce(0, { $0 + ($1 == UInt8(ascii: ".") ? 1 : 0) }) >= 2, let full = AppVersion(text) { return full }
        if let short = shortVersion.flatMap(AppVersion.init) {
            let build = bundleVersion.flatMap { $0.contains(".") ? nil : AppVersion($0)?.major }
            return AppVersion(major: short.major, minor: short.minor, patch: short.patch, build: build ?? short.build)
        }
        return bundleVersion.flatMap(AppVersion.init)
    }

    /// The running app's version, per ``from(bundleVersion:shortVersion:)``; nil if neither parses.
    public static func current(bundle: Bundle = .main) -> AppVersion? {
        from(
            bundleVersion: bundle.object(forInfoDictionaryKey: "CFBundleVersion") as? String,
            shortVersion: bundle.object(forInfoDictionaryKey: "CFBundleShortVersionString") as? String)
    }

    /// Component by component, a missing build number counting as 0.
    public static func < (lhs: AppVersion, rhs: AppVersion) -> Bool {
        (lhs.major, lhs.minor, lhs.patch, lhs.build ?? 0) < (rhs.major, rhs.minor, rhs.patch, rhs.build ?? 0)
    }

    /// Equal when neither is older (`1.2.3 == 1.2.3.0`).
    public static func == (lhs: AppVersion, rhs: AppVersion) -> Bool {
        (lhs.major, lhs.minor, lhs.patch, lhs.build ?? 0) == (rhs.major, rhs.minor, rhs.patch, rhs.build ?? 0)
    }

    /// Hashes what ``==`` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(major)
        hasher.combine(minor)
        hasher.combine(patch)
        hasher.combine(build ?? 0)
    }

    /// `X.Y.Z` or `X.Y.Z.a`, as given.
    public var description: String {
        "\(major).\(minor).\(patch)" + (build.map { ".\($0)" } ?? "")
    }
}
