import FeatureFlags

extension ServerDocument {
    /// The seeds' demo data: seed 001's table (AuraLink / ZenithSat × Personal / Business)
    /// under seed 000's parameter names, targeted on the context's `partner` and
    /// `plan_tier`, plus one per-venue feature (`new_checkout` at venue `venue-42`).
    public static let seedExample: ServerDocument = {
        let base: [String: FlagValue] = [
            "plan_displayName": "Standard",
            "plan_themeColor": "#7F8C8D",
            "plan_data_limit": 100,
            "plan_priority_support": false,
            "plan_feature_list": ["usage", "billing", "status"],
            "new_checkout": false,
            "kill_switch": false,
        ]
        let standardFeatures: FlagValue = ["usage", "billing", "support_chat", "map", "status"]
        let businessFeatures: FlagValue = ["usage", "billing", "support_chat", "map", "status", "team"]
        func plan(_ partner: String, _ tier: String, _ name: String, _ color: String, _ limit: Int, business: Bool) -> Rule {
            Rule(
                name: "\(partner)-\(tier)",
                conditions: ["partner": [.string(partner)], "plan_tier": [.string(tier)]],
                flags: [
                    "plan_displayName": FlagEntry(value: .string(name)),
                    "plan_themeColor": FlagEntry(value: .string(color)),
                    "plan_data_limit": FlagEntry(value: .int(limit)),
                    "plan_priority_support": FlagEntry(value: .bool(business)),
                    "plan_feature_list": FlagEntry(value: business ? businessFeatures : standardFeatures),
                ])
        }
        return ServerDocument(
            base: FlagDocument(
                version: "2025-08-04T10:00:00Z", ttl: 86_400, flags: base.mapValues { FlagEntry(value: $0) }),
            rules: [
                Rule(name: "venue-42-pilot", conditions: ["venue": ["venue-42"]], flags: ["new_checkout": FlagEntry(value: true)]),
                plan("auralink", "personal", "AuraLink Personal", "#3498DB", 150, business: false),
                plan("auralink", "business", "AuraLink Business", "#2C3E50", 750, business: true),
                plan("zenithsat", "personal", "ZenithSat Home", "#2ECC71", 180, business: false),
                plan("zenithsat", "business", "ZenithSat Pro", "#6C3483", 1500, business: true),
            ])
    }()
}
