package import Foundation
package import FeatureFlags
import FlagServer

/// The demo's AuraLink Personal values.
package let auraLinkPersonal: [String: FlagValue] = [
    "plan_displayName": "AuraLink Personal",
    "plan_themeColor": "#3498DB",
    "plan_data_limit": 150,
    "plan_priority_support": false,
    "plan_feature_list": ["usage", "billing", "support_chat", "map", "status"],
    "kill_switch": false,
]

/// The demo's AuraLink Business values.
package let auraLinkBusiness: [String: FlagValue] = [
    "plan_displayName": "AuraLink Business",
    "plan_themeColor": "#2C3E50",
    "plan_data_limit": 750,
    "plan_priority_support": true,
    "plan_feature_list": ["usage", "billing", "support_chat", "map", "status", "team"],
    "kill_switch": false,
]

package func snapshot(_ values: [String: FlagValue], version: String = "v1", at date: Date = Date(timeIntervalSince1970: 1_750_000_000)) -> FlagSnapshot {
    FlagSnapshot(values: values, version: version, fetchedAt: date, ttl: 86_400)
}

package let auraPersonal = EvaluationContext(targetingKey: "user-1", venue: "venue-7", partner: "auralink", planTier: "personal")
package let auraBusiness = EvaluationContext(targetingKey: "user-1", venue: "venue-7", partner: "auralink", planTier: "business")
