import Foundation
import Observation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting

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
}

