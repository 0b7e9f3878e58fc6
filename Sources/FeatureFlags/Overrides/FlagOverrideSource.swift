/// Values a tester forces on this device over the service's, as clients carry them (source `override`,
/// reason `STATIC`; the kill switch always wins, safe mode ignores them). FeatureFlagsUI's `FlagOverrides`
/// (a file kept between runs, launch arguments for UI tests) is one; a provider, `FallbackClient` and the
/// in-memory test client take any.
public protocol FlagOverrideSource: AnyObject, Sendable {
    /// What went wrong loading the overrides; a client reports each as ``FlagEvent/overridesRejected(reason:)``.
    var problems: [String] { get }
    /// Registers `observer`, called with every new set of overrides before the change returns, in
    /// registration order; returns its id and the overrides now, atomically.
    func attach(_ observer: @escaping @Sendable ([String: FlagValue]) -> Void) -> (id: Int, values: [String: FlagValue])
    /// Runs `body` with the overrides now, holding off changes until it returns.
    func whileUnchanged(_ body: ([String: FlagValue]) -> Void)
    /// Unregisters the observer `id`.
    func detach(_ id: Int)
}
