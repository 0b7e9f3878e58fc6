import FeatureFlags
import Foundation

/// The persisted and launch overrides file format: one JSON object, flag name to value.
enum OverrideFile {
    /// Files larger than this are refused.
    static let maximumSize = 1 << 20

    /// The overrides in `bytes`, or why they are unusable.
    static func decode(_ bytes: [UInt8]) -> Result<[String: FlagValue], OverrideFileProblem> {
        guard bytes.count <= maximumSize else { return .failure(.init("larger than \(maximumSize) bytes")) }
        let parsed: FlagValue
        do {
            parsed = try FlagJSON.parse(bytes)
        } catch {
            return .failure(.init("not JSON: \(error)"))
        }
        guard case .object(let members) = parsed else {
            return .failure(.init("not a JSON object of flag names to values"))
        }
        if members.count > FlagOverrides.maximumCount {
            return .failure(.init("\(members.count) overrides, more than \(FlagOverrides.maximumCount)"))
        }
        if members.keys.contains("") { return .failure(.init("an empty flag name")) }
        return .success(members)
    }

    /// Why a file of `values` would not read back at the next launch (losing every override), or nil.
    @inline(never)
    static func problemReadingBack(_ values: [String: FlagValue]) -> FlagError? {
        guard case .failure(let problem) = decode(encode(values)) else { return nil }
        return .unreadableOverrides(problem.reason)
    }

    /// The file's bytes for `values`: keys sorted, so that a diff of two files reads well.
    static func encode(_ values: [String: FlagValue]) -> [UInt8] {
        FlagJSON.bytes(.object(values), sortedKeys: true) + [0x0A]
    }
}

/// Why an overrides file is unusable.
struct OverrideFileProblem: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}
