extension FlagSchema {
    /// A schema from its parts.
    package init(rules: [String: Rule], maxPayloadBytes: Int?, rejectUnknownKeys: Bool) {
        self.rules = rules
        self.maxPayloadBytes = maxPayloadBytes
        self.rejectUnknownKeys = rejectUnknownKeys
    }
}
