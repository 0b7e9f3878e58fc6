import FeatureFlags
import FeatureFlagsUI
import Foundation

func policiesSchema(fetcher: FlagFetcher, store: LastKnownGoodStore, bundledSchemaBytes: [UInt8]) throws {
    // snippet: Policies schema
    let schema = try FlagSchema(json: bundledSchemaBytes)       // throws FlagError naming the bad rule
    let provider = FeatureFlagProvider(context: user, fetcher: fetcher, store: store,
                                       configuration: .init(schema: schema))
    // end snippet
    provider.shutdown()
}

func policiesMerge(fetcher: FlagFetcher, store: LastKnownGoodStore, personal: EvaluationContext, business: EvaluationContext) {
    // snippet: Policies merge
    var merge = ContextMerge(tierAttribute: "plan_tier", tierOrder: ["business", "personal"])
    merge.policies = ["plan_feature_list": .union, "plan_data_limit": .maximum, "plan_priority_support": .any]
    merge.policies["plan_displayName"] = .custom { candidates in candidates.last?.value }   // your own rule
    let provider = FeatureFlagProvider(context: personal, fetcher: fetcher, store: store,
                                       configuration: .init(merge: merge))
    provider.identify(merging: [personal, business])
    // end snippet
}

// snippet: Policies enums
enum Feature: String, Codable, Sendable, UnknownCaseRepresentable {
    case usage, billing, supportChat = "support_chat", map, status, team, unknown
}
extension FlagKey where Value == [Feature] {
    static let features = FlagKey("plan_feature_list", default: [.usage])
}
// end snippet

func policiesUpdates(flags: any FeatureFlagClient, showBlockingDialog: (URL?) -> Void, offerUpdate: (URL?) -> Void) {
    // snippet: Policies updates
    if let (update, required) = flags.updateAdvice(for: AppVersion("1.2.3.400")!) {
        if required { showBlockingDialog(update.download) } else { offerUpdate(update.download) }
    }
    // end snippet
}
