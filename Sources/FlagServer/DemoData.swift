package import FeatureFlags

// The demo and rehearsal data of `flagctl demo`, `flagctl serve` and the package's own tests:
// two partners (AuraLink, ZenithSat) × two plan tiers (Personal, Business), one pilot venue.
// Not library API: apps bring their own documents, schemas and contexts.

/// The demo's context attribute names.
package enum DemoAttribute {
    /// The partner (brand), e.g. `auralink`.
    package static let partner = "partner"
    /// The plan tier, `personal` or `business`.
    package static let planTier = "plan_tier"
}

extension EvaluationContext {
    /// A demo context from named attributes; nil arguments are left out.
    package init(
        targetingKey: String?, venue: String? = nil, partner: String? = nil, planTier: String? = nil,
        region: String? = nil, appVersion: String? = nil, attributes extra: [String: FlagValue] = [:]
    ) {
        var attributes = extra
        let named = [
            (Attribute.venue, venue), (DemoAttribute.partner, partner), (DemoAttribute.planTier, planTier),
            (Attribute.region, region), (Attribute.appVersion, appVersion),
        ]
        for case let (name, value?) in named { attributes[name] = .string(value) }
        self.init(targetingKey: targetingKey, attributes: attributes)
    }
}

extension FlagSchema {
    /// The schema of the demo's parameters:
    /// hex theme colour, bounded display name, non-negative data limit, feature names in
    /// snake case, required kill switch.
    ///
    /// The feature list deliberately does not enumerate the features: an app validates
    /// payloads with the schema it shipped with, and a feature added on the server later
    /// must not get the whole payload rejected (forward compatibility: unknown members are
    /// ignored by the key that reads the list, a forward-compatible enum list).
    package static let seedExample: FlagSchema = {
        let value: FlagValue = [
            "max_payload_bytes": 16_384,
            "flags": [
                "plan_themeColor": ["type": "string", "format": "hex-color", "required": true],
                "plan_displayName": ["type": "string", "minLength": 1, "maxLength": 40, "required": true],
                "plan_data_limit": ["type": "int", "min": 0, "max": 100_000],
                "plan_priority_support": ["type": "bool"],
                "plan_feature_list": ["type": "list", "maxItems": 20, "items": ["type": "string", "pattern": "[a-z][a-z0-9_]*", "maxLength": 40]],
                "new_checkout": ["type": "bool"],
                "kill_switch": ["type": "bool", "required": true],
            ],
        ]
        // The literal above is a valid schema; a failure here is a programming error caught by tests.
        return (try? FlagSchema(parsing: value)) ?? FlagSchema(rules: [:], maxPayloadBytes: nil, rejectUnknownKeys: false)
    }()

}

extension ContextMerge {
    /// The demo's plan policies: Business over Personal (by `plan_tier`) for theme and display
    /// name, union of `plan_feature_list`, maximum `plan_data_limit`, any `plan_priority_support`.
    package static let seedPlans = ContextMerge(
        policies: ["plan_feature_list": .union, "plan_data_limit": .maximum, "plan_priority_support": .any],
        tierAttribute: DemoAttribute.planTier, tierOrder: ["business", "personal"])
}

extension ServerDocument {
    /// The demo document: the plan table (AuraLink / ZenithSat × Personal / Business),
    /// targeted on the context's `partner` and `plan_tier`, plus one per-venue feature
    /// (`new_checkout` at venue `venue-42`).
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
