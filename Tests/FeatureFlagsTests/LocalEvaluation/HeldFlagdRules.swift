import Foundation
@testable import FeatureFlags
@testable import FeatureFlagsFlagd

extension LastKnownGoodStore {
    /// The flagd rules the store holds, read as the flagd endpoint reads them (nil when none,
    /// or when they no longer read).
    var flagdRules: LocalRules? { localRules(readBy: FlagdEndpoint(url: URL(fileURLWithPath: "/"))) as? LocalRules }
}

extension LocalRules {
    /// The rules as the fallback file holds them, read back; nil when `bytes` is not such an entry.
    static func decode(_ bytes: ArraySlice<UInt8>) -> LocalRules? {
        HeldRulesEntry.rules(in: bytes, readBy: FlagdEndpoint(url: URL(fileURLWithPath: "/"))) as? LocalRules
    }

    /// The fallback file's entry for these rules.
    func encoded() -> [UInt8] { HeldRulesEntry.encoded(self) }
}
