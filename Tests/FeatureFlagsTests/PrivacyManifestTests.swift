import Foundation
import Testing
import TestSupport

/// The privacy manifest the library ships (`Sources/FeatureFlags/PrivacyInfo.xcprivacy`):
/// a valid property list that declares no tracking and no collected data, and a reason for
/// every required-reason API the library's sources call.
@Suite("Privacy manifest")
struct PrivacyManifestTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let sources = root.appendingPathComponent("Sources/FeatureFlags")

    /// Apple's required-reason API categories, each with the calls that need it (Swift
    /// spellings of the listed APIs) and the reasons this library may give.
    static let categories: [(name: String, calls: [String])] = [
        ("NSPrivacyAccessedAPICategoryFileTimestamp", [
            "stat(", "fstat(", "lstat(", "fstatat(", "getattrlist(", "getattrlistbulk(", "fgetattrlist(", "getattrlistat(",
            ".creationDate", ".modificationDate", "fileModificationDate", "contentModificationDateKey", "creationDateKey",
        ]),
        ("NSPrivacyAccessedAPICategorySystemBootTime", ["systemUptime", "mach_absolute_time("]),
        ("NSPrivacyAccessedAPICategoryDiskSpace", [
            "volumeAvailableCapacity", "volumeTotalCapacity", "systemFreeSize", "systemSize", "statfs(", "statvfs(", "fstatfs(",
            "fstatvfs(", "getattrlist(",
        ]),
        ("NSPrivacyAccessedAPICategoryActiveKeyboards", ["activeInputModes"]),
        ("NSPrivacyAccessedAPICategoryUserDefaults", ["UserDefaults"]),
    ]

    func manifest() throws -> [String: Any] {
        let data = try Data(contentsOf: Self.sources.appendingPathComponent("PrivacyInfo.xcprivacy"))
        return try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
    }

    func declared() throws -> [String: [String]] {
        let types = try #require(try manifest()["NSPrivacyAccessedAPITypes"] as? [[String: Any]])
        var declared: [String: [String]] = [:]
        for entry in types {
            let name = try #require(entry["NSPrivacyAccessedAPIType"] as? String)
            declared[name] = try #require(entry["NSPrivacyAccessedAPITypeReasons"] as? [String])
        }
        return declared
    }

    @Test func declaresNoTrackingAndNoCollectedData() throws {
        let manifest = try manifest()
        #expect(manifest["NSPrivacyTracking"] as? Bool == false)
        #expect((manifest["NSPrivacyTrackingDomains"] as? [Any])?.isEmpty == true)
        #expect((manifest["NSPrivacyCollectedDataTypes"] as? [Any])?.isEmpty == true)
    }

    @Test func declaresFileTimestampsForFilesInTheAppsContainers() throws {
        // C617.1: timestamps of files inside the app container, an App Group container or the
        // app's CloudKit container — where every file of this library lives.
        #expect(try declared() == ["NSPrivacyAccessedAPICategoryFileTimestamp": ["C617.1"]])
    }

    @Test func everyRequiredReasonCallInTheSourcesIsDeclared() async throws {
        // Off the global executor's threads: loopback tests beside it need them.
        try await blocking {
            let declared = try declared()
            let files = try #require(FileManager.default.enumerator(at: Self.sources, includingPropertiesForKeys: nil))
            var used: [String: Set<String>] = [:]
            for case let url as URL in files where url.pathExtension == "swift" {
                let code = try String(contentsOf: url, encoding: .utf8).split(separator: "\n")
                    .filter { !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//") }.joined(separator: "\n")
                for category in Self.categories {
                    for call in category.calls where Self.calls(code, call) {
                        used[category.name, default: []].insert("\(url.lastPathComponent): \(call)")
                    }
                }
            }
            for (category, where_) in used {
                #expect(declared[category] != nil, "\(category) is used but not declared: \(where_.sorted())")
            }
            for category in declared.keys {
                #expect(used[category] != nil, "\(category) is declared but no source uses it")
            }
        }
    }

    /// Whether `code` contains `call` as a call of its own (`stat(` but not `fstat(` when
    /// looking for `stat(`, and not `stat()`, the initialiser of the `stat` structure).
    static func calls(_ code: String, _ call: String) -> Bool {
        var search = code[...]
        while let range = search.range(of: call) {
            let before = range.lowerBound == code.startIndex ? nil : code[code.index(before: range.lowerBound)]
            let after = range.upperBound < code.endIndex ? code[range.upperBound] : nil
            let standalone = before.map { !($0.isLetter || $0.isNumber || $0 == "_") } ?? true
            if standalone || call.first == "." { if !(call.hasSuffix("(") && after == ")") { return true } }
            search = code[range.upperBound...]
        }
        return false
    }
}
