import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting

/// A hook that records every stage it runs, and throws or waits where told.
final class RecordingHook: FlagHook {
    let name: String
    let journal: Locked<[String]>
    let throwsIn: Set<HookStage>
    let clock: TestClock?
    let takes: Duration
    let seen = Locked<[(FlagHookContext, [String: FlagValue])]>([])
    let details = Locked<[FlagDetails<FlagValue?>]>([])
    let errors = Locked<[String]>([])

    init(_ name: String, _ journal: Locked<[String]>, throwsIn: Set<HookStage> = [], clock: TestClock? = nil, takes: Duration = .zero) {
        self.name = name
        self.journal = journal
        self.throwsIn = throwsIn
        self.clock = clock
        self.takes = takes
    }

    struct Thrown: Error, CustomStringConvertible {
        let description: String
    }

    private func stage(_ stage: HookStage, _ context: FlagHookContext, _ hints: [String: FlagValue]) throws {
        journal.withLock { $0.append("\(name).\(stage.rawValue)") }
        seen.withLock { $0.append((context, hints)) }
        clock?.advance(by: takes)
        if throwsIn.contains(stage) { throw Thrown(description: "\(name) refuses \(stage.rawValue)") }
    }

    func before(_ context: FlagHookContext, data: inout [String: any Sendable], hints: [String: FlagValue]) throws {
        data["opened"] = name
        try stage(.before, context, hints)
    }
    func after(_ context: FlagHookContext, details: FlagDetails<FlagValue?>, data: inout [String: any Sendable], hints: [String: FlagValue]) throws {
        self.details.withLock { $0.append(details) }
        try stage(.after, context, hints)
    }
    func error(_ context: FlagHookContext, error: any Error, data: inout [String: any Sendable], hints: [String: FlagValue]) throws {
        errors.withLock { $0.append("\(error)") }
        try stage(.error, context, hints)
    }
    func finally(_ context: FlagHookContext, details: FlagDetails<FlagValue?>, data: inout [String: any Sendable], hints: [String: FlagValue]) throws {
        // The data a stage of this hook left, never another hook's.
        let opened = data["opened"] as? String
        journal.withLock { $0.append(opened == name || opened == nil ? "" : "LEAK") }
        journal.withLock { $0.removeAll { $0.isEmpty } }
        self.details.withLock { $0.append(details) }
        try stage(.finally, context, hints)
    }
}

/// Hooks around `details(_:)`: OpenFeature's stages and order, what they are told, and what
/// a throwing or slow hook can and cannot do.
@Suite("Hooks")
struct FlagHookTests {
    static let newCheckout = FlagKey("new_checkout", default: false)

    /// A client serving `new_checkout: true` with hooks A and B.
    func client(_ journal: Locked<[String]>, a: Set<HookStage> = [], b: Set<HookStage> = []) -> (InMemoryFlagClient, RecordingHook, RecordingHook) {
        let client = InMemoryFlagClient(["new_checkout": true, "label": "x"])
        let hookA = RecordingHook("A", journal, throwsIn: a)
        let hookB = RecordingHook("B", journal, throwsIn: b)
        client.addHooks(hookA, hookB)
        return (client, hookA, hookB)
    }

    @Test func stagesRunStackWiseClientHooksAroundTheReadsOwn() {
        let journal = Locked<[String]>([])
        let (client, _, _) = client(journal)
        let details = client.details(Self.newCheckout, hooks: [RecordingHook("C", journal), RecordingHook("D", journal)])
        #expect(details.value == true && details.errorCode == nil)
        #expect(
            journal.withLock { $0 } == [
                "A.before", "B.before", "C.before", "D.before",
                "D.after", "C.after", "B.after", "A.after",
                "D.finally", "C.finally", "B.finally", "A.finally",
            ])
    }

    @Test func hooksAreToldTheKeyTypeDefaultContextProviderAndHints() throws {
        let dir = TempDir()
        try seedFallback(dir, ["new_checkout": true], for: auraPersonal)
        let client = FallbackClient(store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), context: auraPersonal)
        let journal = Locked<[String]>([])
        let hook = RecordingHook("A", journal)
        client.addHooks(hook)
        let details = client.details(Self.newCheckout, hooks: [], hints: ["screen": "cart"])
        let (context, hints) = try #require(hook.seen.withLock { $0.first })
        #expect(context.flagKey == "new_checkout" && context.valueType == .boolean && context.defaultValue == false)
        #expect(context.evaluationContext == auraPersonal)
        #expect(context.providerName == "FallbackClient")
        #expect(hints == ["screen": "cart"])
        // after and finally see what the read returns (STALE: the seeded values are from 2025,
        // with a one-day TTL, and this client reads the real clock).
        let seen = hook.details.withLock { $0 }
        #expect(details.reason == .stale)
        #expect(seen.count == 2 && seen.allSatisfy { $0.value == .bool(true) && $0.source == details.source && $0.reason == details.reason })
        #expect(FlagValueType(Int.self) == .integer && FlagValueType(Double.self) == .double)
        #expect(FlagValueType(String.self) == .string && FlagValueType([String].self) == .object)
    }

    @Test func aFailedLookupRunsErrorNotAfter() {
        let journal = Locked<[String]>([])
        let (client, hookA, _) = client(journal)
        let details = client.details(FlagKey("missing", default: 7))
        #expect(details.value == 7 && details.errorCode == .flagNotFound)
        #expect(journal.withLock { $0 } == ["A.before", "B.before", "B.error", "A.error", "B.finally", "A.finally"])
        #expect(hookA.errors.withLock { $0 }.first?.contains("FLAG_NOT_FOUND") == true)
        // A type mismatch is a failed lookup too.
        journal.withLock { $0.removeAll() }
        #expect(client.details(FlagKey("label", default: 0)).errorCode == .typeMismatch)
        #expect(journal.withLock { $0 }.contains("A.error") && !journal.withLock { $0 }.contains("A.after"))
    }

    @Test func aThrowingBeforeStopsTheReadAndReturnsTheDefault() {
        let journal = Locked<[String]>([])
        let (client, _, _) = client(journal, a: [.before])
        let details = client.details(Self.newCheckout)
        #expect(details.value == false, "the default, not the served true")
        #expect(details.reason == .error && details.errorCode == .general && details.source == .codeDefault)
        #expect(details.errorMessage?.contains("hook \"A\" failed in before") == true)
        #expect(journal.withLock { $0 } == ["A.before", "B.error", "A.error", "B.finally", "A.finally"], "B.before never ran")
        #expect(client.value(Self.newCheckout) == true, "plain reads never run hooks")
        _ = client.details(Self.newCheckout)
        let failures = client.recentEvents.filter { $0.kind == .hookFailed }
        #expect(failures.count == 1, "reported once per hook and stage")
        #expect(failures.first?.hook == "A" && failures.first?.hookStage == "before" && failures.first?.keys == ["new_checkout"])
    }

    @Test func aThrowingAfterRejectsTheValue() {
        let journal = Locked<[String]>([])
        let (client, hookA, _) = client(journal, b: [.after])
        let details = client.details(Self.newCheckout)
        #expect(details.value == false && details.errorCode == .general)
        #expect(journal.withLock { $0 } == ["A.before", "B.before", "B.after", "B.error", "A.error", "B.finally", "A.finally"])
        #expect(hookA.errors.withLock { $0 } == [#"GENERAL: hook "B" failed in after: B refuses after"#], "the error stage is given a FlagError with GENERAL")
        #expect(hookA.details.withLock { $0 }.last?.value == .bool(false), "finally sees what the read returns")
    }

    @Test func throwingErrorAndFinallyStagesAreIgnored() {
        let journal = Locked<[String]>([])
        let (client, _, _) = client(journal, a: [.finally], b: [.error, .finally])
        let missing = client.details(FlagKey("missing", default: 3))
        #expect(missing.value == 3 && missing.errorCode == .flagNotFound, "the lookup's own error, unchanged")
        #expect(journal.withLock { $0 } == ["A.before", "B.before", "B.error", "A.error", "B.finally", "A.finally"])
        let found = client.details(Self.newCheckout)
        #expect(found.value == true && found.errorCode == nil, "a throwing finally changes nothing")
        let failed = Set(client.recentEvents.filter { $0.kind == .hookFailed }.compactMap { e in e.hook.map { "\($0).\(e.hookStage!)" } })
        #expect(failed == ["B.error", "B.finally", "A.finally"])
    }

    @Test func aSlowHookIsDisabledAfterItsFirstSlowStage() {
        let clock = TestClock()
        let events = Locked<[FlagEvent]>([])
        let journal = Locked<[String]>([])
        let hooks = FlagHooks(
            [RecordingHook("slow", journal, clock: clock, takes: .milliseconds(80)), RecordingHook("quick", journal)],
            timeLimit: .milliseconds(50), clock: makeElapsedClock(clock)
        ) { event in events.withLock { $0.append(event) } }
        let key = FlagKey("f", default: 1)
        let read = { hooks.run(key, context: { .anonymous }, provider: "t") { FlagDetails(key: "f", value: 2, reason: .static, source: .override) } }
        #expect(read().value == 2, "the slow read itself still returns its value")
        #expect(events.withLock { $0 }.map(\.description) == ["hook_disabled slow stage=before took=80ms"])
        #expect(hooks.all.map(\.name) == ["quick"])
        journal.withLock { $0.removeAll() }
        #expect(read().value == 2)
        #expect(journal.withLock { $0 } == ["quick.before", "quick.after", "quick.finally"])
        // A read's own hooks are never disabled (the caller passes them each time).
        let own = RecordingHook("own", journal, clock: clock, takes: .milliseconds(80))
        _ = hooks.run(key, invocation: [own], context: { .anonymous }, provider: "t") {
            FlagDetails(key: "f", value: 2, reason: .static, source: .override)
        }
        #expect(events.withLock { $0 }.count == 1)
    }

    @Test func aSlowHookDoesNotBlockOtherReaders() async throws {
        let client = InMemoryFlagClient(["new_checkout": true])
        let gate = DispatchSemaphore(value: 0)
        let entered = DispatchSemaphore(value: 0)
        struct Stuck: FlagHook {
            let gate: DispatchSemaphore
            let entered: DispatchSemaphore
            func before(_ context: FlagHookContext, data: inout [String: any Sendable], hints: [String: FlagValue]) throws {
                entered.signal()
                gate.wait()
            }
        }
        let stuck = Stuck(gate: gate, entered: entered)
        let done = DispatchSemaphore(value: 0)
        let reader = Thread {
            _ = client.details(Self.newCheckout, hooks: [stuck])
            done.signal()
        }
        reader.start()
        entered.wait()
        // While one details call is stuck in its hook, every other read goes on.
        #expect(client.value(Self.newCheckout) == true)
        #expect(client.details(Self.newCheckout).value == true)
        client.set("new_checkout", false)
        #expect(client.value(Self.newCheckout) == false, "writers are not blocked either")
        gate.signal()
        done.wait()
    }

    @Test func theProviderRunsItsHooksWithItsContextAndService() async throws {
        let journal = Locked<[String]>([])
        let hook = RecordingHook("P", journal)
        var configuration = FeatureFlagProvider.Configuration()
        configuration.hooks = [hook]
        let fixture = try ProviderFixture(configuration: configuration)
        defer { fixture.stop() }
        _ = await fixture.provider.refresh()
        _ = fixture.provider.value(Self.newCheckout)
        #expect(journal.withLock { $0 }.isEmpty, "value(_:) runs no hook")
        _ = fixture.provider.details(Self.newCheckout)
        #expect(journal.withLock { $0 } == ["P.before", "P.after", "P.finally"])
        let context = try #require(hook.seen.withLock { $0.first?.0 })
        #expect(context.evaluationContext == auraPersonal && context.providerName == "FeatureFlagProvider/json")
        fixture.provider.identify(auraBusiness)
        _ = fixture.provider.details(Self.newCheckout)
        #expect(hook.seen.withLock { $0.last?.0.evaluationContext } == auraBusiness, "the context being served")
    }

    @Test func aClientOfAnotherLibraryRunsAReadsOwnHooks() {
        struct Plain: FeatureFlagClient {
            func flagValue(_ name: String) -> FlagValue? { name == "new_checkout" ? true : nil }
            func flagDetails(_ name: String, nameHash: Int) -> FlagDetails<FlagValue?> {
                FlagDetails(key: name, value: flagValue(name), reason: .static, source: .override)
            }
            var snapshot: FlagSnapshot { .empty }
            var status: ProviderStatus { .ready }
            var isKillSwitchActive: Bool { false }
            func changes() -> AsyncStream<FlagChange> { AsyncStream { $0.finish() } }
            func events() -> AsyncStream<FlagEvent> { AsyncStream { $0.finish() } }
        }
        let journal = Locked<[String]>([])
        let hook = RecordingHook("X", journal)
        #expect(Plain().details(Self.newCheckout, hooks: [hook]).value == true)
        #expect(journal.withLock { $0 } == ["X.before", "X.after", "X.finally"])
        #expect(hook.seen.withLock { $0.first?.0.providerName } == "Plain")
    }
}
