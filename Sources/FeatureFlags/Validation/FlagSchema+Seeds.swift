extension FlagSchema {
    /// The schema of the seeds' parameters (seed 000 §6.3–6.4, seed 001's features):
    /// hex theme colour, bounded display name, non-negative data limit, feature names in
    /// snake case, required kill switch.
    ///
    /// The feature list deliberately does not enumerate the features: an app validates
    /// payloads with the schema it shipped with, and a feature added on the server later
    /// must not get the whole payload rejected (seed 001's forward compatibility — unknown
    /// members are ignored by the key that reads the list, a forward-compatible enum list).
    public static let seedExample: FlagSchema = {
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

    /// A schema from its parts.
    public init(rules: [String: Rule], maxPayloadBytes: Int?, rejectUnknownKeys: Bool) {
        self.rules = rules
        self.maxPayloadBytes = maxPayloadBytes
        self.rejectUnknownKeys = rejectUnknownKeys
    }
}
