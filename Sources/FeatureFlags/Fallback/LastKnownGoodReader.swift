import Foundation

/// How a client that serves from a ``LastKnownGoodStore`` starts and switches context: the
/// bundled defaults beneath, the events that say what loading found (the store's outcome,
/// unreadable bundled defaults, an unreadable stored snapshot), and the lookups. Shared by
/// ``FeatureFlagProvider`` and ``FallbackClient``.
struct LastKnownGoodReader {
    /// The bundled defaults and the kill-switch key.
    let base: ServingBase
    /// What loading found, to emit once the client exists.
    private(set) var events: [FlagEvent] = []

    /// Reads `bundledDefaults` and notes what `store` found at load.
    init(store: LastKnownGoodStore, bundledDefaults: BundledDefaults, killSwitchKey: String) {
        switch store.loadOutcome {
        case .loaded(let contexts, let bytes): events.append(.fallbackLoaded(contexts: contexts, bytes: bytes))
        case .noFile: break
        case .rejected(let reason, let keptAt): events.append(.fallbackRejected(reason: reason, keptAt: keptAt))
        case .unavailable(let reason): events.append(.fallbackRejected(reason: reason, keptAt: store.fileURL.fileSystemPath))
        }
        if let warning = store.loadWarning { events.append(.fallbackWarning(reason: warning)) }
        var defaults: [String: FlagEntry] = [:]
        switch bundledDefaults.load() {
        case .success(let entries): defaults = entries
        case .failure(let error): events.append(.error(.parseError, message: error.message))
        }
        base = ServingBase(defaults: defaults, killSwitchKey: killSwitchKey)
    }

    /// The stored snapshot for `fingerprint`, marked used, prepared to serve with its source —
    /// or the defaults alone (`code_default`), with the reason in `problem` when a stored
    /// snapshot could not be read.
    static func lastKnownGood(
        of fingerprint: String?, in store: LastKnownGoodStore, base: ServingBase
    ) -> (prepared: PreparedSnapshot, source: FlagSource, problem: FlagEvent?) {
        guard let fingerprint else { return (base.prepare(.empty), .codeDefault, nil) }
        switch store.use(fingerprint) {
        case .found(let stored)?:
            return (base.prepare(stored.snapshot), .fallback, nil)
        case .unreadable(let error)?:
            let problem = FlagEvent.fallbackRejected(reason: "stored snapshot undecodable: \(error.message)", keptAt: nil)
            return (base.prepare(.empty), .codeDefault, problem)
        case nil:
            return (base.prepare(.empty), .codeDefault, nil)
        }
    }

    /// ``lastKnownGood(of:in:base:)`` at start — checked with `fetcher`'s trusted keys when
    /// given one (``lastKnownGood(of:context:in:base:checkedBy:merge:at:)``) — with whether the kill
    /// switch is held on the device: a problem, and a kill, join the load events.
    mutating func start(
        with fingerprint: String?, in store: LastKnownGoodStore, context: EvaluationContext? = nil, checkedBy fetcher: FlagFetcher? = nil,
        merge: ContextMerge = ContextMerge(), at date: Date = .distantPast
    ) -> (PreparedSnapshot, FlagSource, held: Bool) {
        let (prepared, source, problem) = Self.lastKnownGood(
            of: fingerprint, context: context, in: store, base: base, checkedBy: fetcher, merge: merge, at: date)
        let held = store.killHold != nil
        if let problem { events.append(problem) }
        if prepared.killed || held { events.append(.killSwitch(active: true)) }
        return (prepared, source, held)
    }
}
