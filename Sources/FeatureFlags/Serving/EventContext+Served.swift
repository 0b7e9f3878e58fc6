extension EventContext {
    /// Who `served`'s values are for: its context, or the unnamed context's fingerprint.
    init(of served: ServedState, detail: EventContextDetail) {
        if let unnamed = served.unnamedContext {
            self.init(fingerprint: unnamed, targetingKey: nil, attributes: nil)
        } else {
            self.init(served.context, detail: detail)
        }
    }
}
