import FeatureFlags
import FeatureFlagsTesting
import Foundation
import Testing
import TestSupport

/// A team's own override source (here values a remote QA console pushes), through the public
/// protocol alone: every client carries it as it carries `FlagOverrides`, reports its problems,
/// follows its changes, and lets go of it when the client goes.
final class ConsoleOverrides: FlagOverrideSource {
    private let state = Mutexed<(values: [String: FlagValue], observers: [(Int, @Sendable ([String: FlagValue]) -> Void)], next: Int)>(
        ([:], [], 0))
    let problems: [String]

    init(_ values: [String: FlagValue] = [:], problems: [String] = []) {
        self.problems = problems
        state.withLock { $0.values = values }
    }

    func push(_ values: [String: FlagValue]) {
        let observers = state.withLock { s in
            s.values = values
            return s.observers.map(\.1)
        }
        for observer in observers { observer(values) }
    }

    var observerCount: Int { state.withLock { $0.observers.count } }

    func attach(_ observer: @escaping @Sendable ([String: FlagValue]) -> Void) -> (id: Int, values: [String: FlagValue]) {
        state.withLock { s in
            s.next += 1
            s.observers.append((s.next, observer))
            return (s.next, s.values)
        }
    }

    func whileUnchanged(_ body: ([String: FlagValue]) -> Void) { body(state.withLock { $0.values }) }

    func detach(_ id: Int) { state.withLock { s in s.observers.removeAll { $0.0 == id } } }
}

/// A value behind a lock, for the test's own source (the package's `Locked` is not public).
final class Mutexed<Value: Sendable>: @unchecked Sendable {
    // @unchecked: `value` is read and written only while `lock` is held.
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

@Suite("A team's own override source")
struct OverrideSourceTests {
    static let newCheckout = FlagKey("new_checkout", default: false)

    @Test func theInMemoryClientServesItsValuesAndFollowsItsChanges() {
        let console = ConsoleOverrides(["new_checkout": true])
        let client = InMemoryFlagClient(["new_checkout": false], overrides: console)
        #expect(client.value(Self.newCheckout) == true)
        #expect(client.details(Self.newCheckout).source == .override)
        console.push([:])
        #expect(client.value(Self.newCheckout) == false, "the service's value again, at once")
        console.push(["kill_switch": true, "new_checkout": true])
        #expect(!client.isKillSwitchActive, "the kill switch is never overridden")
        #expect(client.value(Self.newCheckout) == true)
    }

    @Test func theKillSwitchStillWinsOverTheSource() {
        let console = ConsoleOverrides(["new_checkout": true])
        let client = InMemoryFlagClient(["new_checkout": false, "kill_switch": true], overrides: console)
        #expect(client.value(Self.newCheckout) == false)
        #expect(client.details(Self.newCheckout).source == .killSwitch)
    }

    @Test func itsProblemsAreReportedAsEvents() {
        let console = ConsoleOverrides(problems: ["the console was unreachable"])
        let client = InMemoryFlagClient([:], overrides: console)
        #expect(client.recentEvents.contains { $0.kind == .overridesRejected && $0.message == "the console was unreachable" })
    }

    @Test func aFallbackClientCarriesItAndLetsGo() throws {
        let dir = TempDir()
        let console = ConsoleOverrides(["new_checkout": true])
        var client: FallbackClient? = FallbackClient(
            store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), context: EvaluationContext(targetingKey: "u"), overrides: console)
        #expect(client?.value(Self.newCheckout) == true)
        #expect(console.observerCount == 1)
        console.push(["new_checkout": false])
        #expect(client?.value(Self.newCheckout) == false)
        client = nil
        #expect(console.observerCount == 0, "a client that goes stops observing")
    }

    @Test func aProviderCarriesItUntilShutdown() async throws {
        let dir = TempDir()
        let console = ConsoleOverrides(["new_checkout": true])
        let provider = FeatureFlagProvider.forTesting(
            context: EvaluationContext(targetingKey: "u"), store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")),
            configuration: .init(overrides: console), running: false)
        #expect(provider.value(Self.newCheckout) == true)
        console.push(["new_checkout": false])
        #expect(provider.value(Self.newCheckout) == false)
        provider.shutdown()
    }
}
