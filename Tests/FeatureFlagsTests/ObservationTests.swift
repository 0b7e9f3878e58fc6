import Foundation
import Observation
import Testing
import TestSupport
@testable import FeatureFlags
@testable import FeatureFlagsUI
import FeatureFlagsTesting
import FlagServer

@Suite("Observation")
struct ObservationTests {
    @MainActor
    @Test func observableFlagsTrackValuesStatusAndKillSwitch() async throws {
        let client = InMemoryFlagClient(["new_checkout": false])
        let flags = ObservableFlags(client: client)
        #expect(flags.value(.newCheckout) == false)
        #expect(!flags.isKillSwitchActive)

        // A view reading `value` is told when the value changes.
        let changed = Locked(false)
        withObservationTracking {
            _ = flags.value(.newCheckout)
        } onChange: {
            changed.withLock { $0 = true }
        }
        client.set(.newCheckout, true)
        #expect(await eventually { changed.withLock { $0 } })
        #expect(flags.value(.newCheckout))
        #expect(flags.lastChangedKeys == ["new_checkout"])

        client.setKillSwitch(true)
        #expect(await eventually { flags.isKillSwitchActive })
        #expect(flags.value(.newCheckout) == false)

        client.setStatus(.stale)
        client.emit(.stale(age: 1))
        #expect(await eventually { flags.status == .stale })
        flags.stop()
    }

    /// The follower both SwiftUI wrappers stand on (`ObservableFlags` with Observation,
    /// `ObservableFlagsObject` with Combine, which fires `objectWillChange` in `update`): one
    /// update per visible change, in order, each before the state it announces; nothing for an
    /// event that moved nothing; nothing after `stop()`.
    @MainActor
    @Test func theFollowerBehindBothSwiftUIWrappersUpdatesOncePerVisibleChange() async throws {
        let client = InMemoryFlagClient(["new_checkout": false])
        let updates = Locked<[FlagFollower.State]>([])
        var stateWhenUpdated: [FlagFollower.State] = []
        var follower: FlagFollower?
        follower = FlagFollower(client: client) { next in
            updates.withLock { $0.append(next) }
            // `update` runs before `state` moves: the "will change" moment Combine needs.
            if let current = follower?.state { stateWhenUpdated.append(current) }
        }
        let initial = try #require(follower?.state)
        #expect(initial.status == client.status && !initial.isKillSwitchActive && initial.lastChangedKeys.isEmpty)

        client.set(.newCheckout, true)
        #expect(await eventually { updates.withLock { $0.count } == 1 })
        #expect(updates.withLock { $0.last?.lastChangedKeys } == ["new_checkout"])
        #expect(follower?.state.snapshot.flags["new_checkout"]?.value == true)
        #expect(stateWhenUpdated.first == initial)

        client.setKillSwitch(true)
        #expect(await eventually { follower?.state.isKillSwitchActive == true })
        client.setStatus(.error)
        client.emit(.error(.general, message: "test"))
        #expect(await eventually { follower?.state.status == .error })
        let count = updates.withLock { $0.count }
        // An event that changes nothing a view shows: no update.
        client.emit(.error(.general, message: "again"))
        client.set(.newCheckout, true)  // the same value again
        await pause()
        #expect(updates.withLock { $0.count } == count)

        follower?.stop()
        client.set(.newCheckout, false)
        await pause()
        #expect(updates.withLock { $0.count } == count)
        #expect(follower?.state.snapshot.flags["new_checkout"]?.value == true)
    }

    @Test func valuesOfOneKeyFromAProvider() async throws {
        let f = try ProviderFixture()
        defer { f.stop() }
        let values = f.provider.values(of: .themeColor)
        var iterator = values.makeAsyncIterator()
        #expect(await iterator.next() == "#000000")
        _ = await f.provider.refresh()
        #expect(await iterator.next() == "#3498DB")
        // The new context has no Last-Known-Good: its code default, never the old context's value.
        f.provider.identify(auraBusiness)
        #expect(await iterator.next() == "#000000")
        _ = await f.provider.refresh()
        #expect(await iterator.next() == "#2C3E50")
    }

    /// A client whose value changes while a follower subscribes — after it could have read the
    /// client, before its stream exists — so the change is on no stream anyone holds.
    final class ChangingWhileSubscribing: FeatureFlagClient {
        let inner = InMemoryFlagClient(["new_checkout": false])
        func flagValue(_ name: String) -> FlagValue? { inner.flagValue(name) }
        func flagValue(_ name: String, nameHash: Int) -> FlagValue? { inner.flagValue(name, nameHash: nameHash) }
        func details<Value>(_ key: FlagKey<Value>) -> FlagDetails<Value> { inner.details(key) }
        func details<Value>(_ key: FlagKey<Value>, hooks: [any FlagHook], hints: [String: FlagValue]) -> FlagDetails<Value> {
            inner.details(key, hooks: hooks, hints: hints)
        }
        func flagDetails(_ name: String, nameHash: Int) -> FlagDetails<FlagValue?> { inner.flagDetails(name, nameHash: nameHash) }
        var snapshot: FlagSnapshot { inner.snapshot }
        var status: ProviderStatus { inner.status }
        var isKillSwitchActive: Bool { inner.isKillSwitchActive }
        func changes() -> AsyncStream<(keys: Set<String>, snapshot: FlagSnapshot, killSwitchActive: Bool)> {
            inner.set(.newCheckout, true)
            return inner.changes()
        }
        func events() -> AsyncStream<FlagEvent> { inner.events() }
        func track(_ eventName: String, value: Double?, attributes: [String: FlagValue]) {}
        func noteUnknownValues(_ values: [String], in flag: String) {}
    }

    @MainActor
    @Test func aChangeWhileSubscribingIsNotMissed() async throws {
        let follower = FlagFollower(client: ChangingWhileSubscribing()) { _ in }
        #expect(follower.state.snapshot.flags["new_checkout"]?.value == true, "read after subscribing")
        follower.stop()
        let flags = ObservableFlags(client: ChangingWhileSubscribing())
        #expect(flags.snapshot.flags["new_checkout"]?.value == true)
        flags.stop()
        let model = FlagInspectorModel(FlagInspector(client: ChangingWhileSubscribing(), declaring: [FlagKey<Bool>.newCheckout]))
        #expect(model.rows.first { $0.key == "new_checkout" }?.value == true, "\(model.rows)")
        model.stop()
    }
}


extension ObservationTests {
    /// A tester's override changes what `value` returns without changing the snapshot: a view
    /// reading the flag must still be told — each time, also when the same key flips back.
    @MainActor
    @Test func aViewIsToldOfEveryOverrideItReads() async throws {
        let dir = TempDir()
        let overrides = FlagOverrides(fileURL: dir.url("overrides.json"), allowed: true, launch: nil)
        let client = FallbackClient(store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")), context: auraPersonal, overrides: overrides)
        defer { client.shutdown() }
        let flags = ObservableFlags(client: client)
        defer { flags.stop() }
        // The follower under `ObservableFlagsObject` (Combine: `objectWillChange` per update).
        let updates = Locked(0)
        let follower = FlagFollower(client: client) { _ in updates.withLock { $0 += 1 } }
        defer { follower.stop() }
        #expect(flags.value(.newCheckout) == false)
        for (n, expected) in [true, false, true].enumerated() {
            let changed = Locked(false)
            withObservationTracking {
                _ = flags.value(.newCheckout)
            } onChange: {
                changed.withLock { $0 = true }
            }
            try overrides.override(.newCheckout, expected)
            #expect(await eventually { changed.withLock { $0 } }, "override to \(expected): the view was not told")
            #expect(flags.value(.newCheckout) == expected)
            #expect(await eventually { updates.withLock { $0 } == n + 1 }, "one update per override, the same key flipped back too")
        }
    }
}

extension ObservationTests {
    /// A fetch that brings the same values under a new version, or an identify to a context
    /// whose values are the same, changes no value — but the snapshot served is another, and
    /// `snapshot` says which is served now.
    @MainActor
    @Test func theSnapshotShownIsTheOneServedEvenWhenNoValueMoved() async throws {
        let f = try ProviderFixture()
        defer { f.stop() }
        #expect(await f.provider.refresh().isSuccess)
        let flags = ObservableFlags(client: f.provider)
        defer { flags.stop() }
        let first = f.provider.snapshot.version
        #expect(flags.snapshot.version == first)
        var document = f.server.document
        document.base.version = "same-values-new-version"
        f.server.document = document
        #expect(await f.provider.refresh().isSuccess)
        #expect(f.provider.snapshot.version == "same-values-new-version")
        #expect(await eventually { flags.snapshot.version == "same-values-new-version" }, "still shows \(String(describing: flags.snapshot.version))")
    }
}
