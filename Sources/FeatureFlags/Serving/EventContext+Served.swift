extension EventContext {
    /// Who `served`'s values are for: its context, or the context known only by its
    /// fingerprint that it serves unnamed.
    init(of served: ServedState, detail: EventContextDetail) {
        if let unnamed = served.unnamedContext {
            self.init(fingerprint: unnamed)
        } else {
            self.init(served.context, detail: detail)
        }
    }
}
