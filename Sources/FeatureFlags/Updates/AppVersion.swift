public import Foundation

/// An app version `X.Y.Z` or `X.Y.Z.a` — major, minor, patch and an optional build number —
/// as many iOS apps structure `CFBundleVersion`. Ordered component by component; a missing
/// build number counts as 0, so `1.2.3` is older than `1.2.3.400`.
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

    /// Parses `X.Y.Z` or `X.Y.Z.a`: three or four dot-separated runs of ASCII digits (at most
    /// 9 each); nil for anything else — `1.2`, `v1.2.3`, `1.2.3-beta`, `1..3`, empty.
    public init?(_ text: String) {
        let parts = text.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 || parts.count == 4 else { return nil }
        var numbers: [Int] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 9, part.allSatisfy({ (48...57).contains($0) }) else { return nil }
            numbers.append(part.reduce(0) { $0 * 10 + Int($1 - 48) })
        }
        self.init(major: numbers[0], minor: numbers[1], patch: numbers[2], build: numbers.count == 4 ? numbers[3] : nil)
    }

    /// The running app's version from its bundle: `CFBundleVersion` when it has the
    /// `X.Y.Z[.a]` form (the build number included), else `CFBundleShortVersionString`; nil when
    /// neither parses (as in a command-line tool on Linux, which has no Info.plist).
    public static func current(bundle: Bundle = .main) -> AppVersion? {
        for key in ["CFBundleVersion", "CFBundleShortVersionString"] {
            if let text = bundle.object(forInfoDictionaryKey: key) as? String, let version = AppVersion(text) {
                return version
            }
        }
        return nil
    }

    /// Component by component, a missing build number counting as 0.
    public static func < (lhs: AppVersion, rhs: AppVersion) -> Bool {
        (lhs.major, lhs.minor, lhs.patch, lhs.build ?? 0) < (rhs.major, rhs.minor, rhs.patch, rhs.build ?? 0)
    }

    /// `X.Y.Z` or `X.Y.Z.a`, as given.
    public var description: String {
        "\(major).\(minor).\(patch)" + (build.map { ".\($0)" } ?? "")
    }
}
