import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting

extension FlagKey where Value == Bool {
    static let newCheckout = FlagKey("new_checkout", default: false)
}

extension FlagKey where Value == String {
    static let themeColor = FlagKey("plan_themeColor", default: "#000000")
}

@Suite("Reads through FeatureFlagClient")
struct ClientReadTests {
    @Test func aConsumerTestNeedsThreeLines() {
        let flags = InMemoryFlagClient(["new_checkout": true])
        let checkout = CheckoutModel(flags: flags)
        #expect(checkout.showsNewCheckout)
    }

    struct CheckoutModel {
        let flags: any FeatureFlagClient
        var showsNewCheckout: Bool { flags.value(.newCheckout) }
    }

    @Test func presentValue() {
        let clock = ManualDate()
        let flags = InMemoryFlagClient(["plan_themeColor": "#3498DB"], version: "2025-08-04", now: clock.function)
        clock.advance(30)
        let details = flags.details(.themeColor)
        #expect(details.value == "#3498DB")
        #expect(details.reason == .static)
        #expect(details.source == .override)
        #expect(details.errorCode == nil)
        #expect(details.snapshotVersion == "2025-08-04")
        #expect(details.age == 30)
        #expect(details.key == "plan_themeColor")
    }

    @Test func missingKeyReturnsDefaultWithFlagNotFound() {
        let flags = InMemoryFlagClient()
        #expect(flags.value(.newCheckout) == false)
        let details = flags.details(FlagKey("absent", default: 7))
        #expect(details.value == 7)
        #expect(details.errorCode == .flagNotFound)
        #expect(details.reason == .error)
        #expect(details.source == .codeDefault)
        #expect(details.errorMessage?.contains("absent") == true)
    }

    /// A failed read's message is kept beside the flag's shared variant and metadata, in an
    /// object of its own: the table's shared extras stay as they were.
    @Test func aFailedReadKeepsTheFlagsVariantAndMetadataBesideItsMessage() {
        let shared = FlagExtras.of(variant: "on", metadata: ["team": "payments"])
        let failed = FlagDetails(
            key: "k", value: false, extras: shared, reason: .error, errorCode: .typeMismatch, errorMessage: "expected Bool, found string",
            source: .codeDefault)
        #expect(failed.errorMessage == "expected Bool, found string")
        #expect(failed.variant == "on" && failed.metadata == ["team": "payments"])
        #expect(shared?.errorMessage == nil, "the flag table's extras are not changed")
        let succeeded = FlagDetails(key: "k", value: true, extras: shared, reason: .static, source: .network)
        #expect(succeeded.errorMessage == nil && succeeded.variant == "on")
        #expect(FlagDetails(key: "k", value: 1, reason: .error, errorMessage: "why", source: .codeDefault).errorMessage == "why")
        // Equality counts the message, whichever object holds it.
        let same = FlagDetails(
            key: "k", value: false, variant: "on", reason: .error, errorCode: .typeMismatch, errorMessage: "expected Bool, found string",
            source: .codeDefault, metadata: ["team": "payments"])
        #expect(failed == same)
        let other = FlagDetails(
            key: "k", value: false, variant: "on", reason: .error, errorCode: .typeMismatch, errorMessage: "another reason",
            source: .codeDefault, metadata: ["team": "payments"])
        #expect(failed != other)
    }

    @Test func missingKeyBeforeReadyIsProviderNotReady() {
        let flags = InMemoryFlagClient(status: .notReady)
        #expect(flags.details(.newCheckout).errorCode == .providerNotReady)
    }

    @Test func wrongTypeReturnsDefaultWithTypeMismatch() {
        let flags = InMemoryFlagClient(["new_checkout": "yes", "limit": 2.5])
        #expect(flags.value(.newCheckout) == false)
        let details = flags.details(.newCheckout)
        #expect(details.errorCode == .typeMismatch)
        #expect(details.reason == .error)
        #expect(details.value == false)
        #expect(details.errorMessage == "expected Bool, found string")
        #expect(flags.int("limit", default: 5) == 5)
        #expect(flags.double("limit", default: 5) == 2.5)
    }

    @Test func untypedLookups() {
        let flags = InMemoryFlagClient(auraLinkPersonal)
        #expect(flags.bool("plan_priority_support", default: true) == false)
        #expect(flags.int("plan_data_limit", default: 0) == 150)
        #expect(flags.double("plan_data_limit", default: 0) == 150)
        #expect(flags.string("plan_displayName", default: "") == "AuraLink Personal")
        #expect(flags.string("nope", default: "fallback") == "fallback")
        #expect(flags.value(FlagKey("plan_feature_list", default: [String]())).contains("map"))
    }

    @Test func rawFlagValueLookup() {
        let flags = InMemoryFlagClient(["a": 1, "kill_switch": false])
        flags.set("v", entry: FlagEntry(value: nil, errorCode: .general))
        #expect(flags.flagValue("a") == 1)
        #expect(flags.flagValue("missing") == nil)
        #expect(flags.flagValue("v") == nil)
        flags.setKillSwitch(true)
        #expect(flags.flagValue("a") == nil)
        #expect(flags.flagValue("kill_switch") == true)
    }

    @Test func entryWithoutValueUsesCodeDefaultAndKeepsTheServiceReason() {
        let flags = InMemoryFlagClient()
        flags.set("f", entry: FlagEntry(value: nil, variant: "off", reason: .disabled, errorCode: .targetingKeyMissing))
        let details = flags.details(FlagKey("f", default: 3))
        #expect(details.value == 3)
        #expect(details.errorCode == .targetingKeyMissing)
        #expect(details.reason == .disabled)
        #expect(details.variant == "off")
        #expect(details.source == .codeDefault)
        #expect(flags.value(FlagKey("f", default: 3)) == 3)
    }

    @Test func variantReasonAndMetadataPassThrough() {
        let flags = InMemoryFlagClient()
        flags.set("f", entry: FlagEntry(value: true, variant: "on", reason: FlagReason(rawValue: "CUSTOM_RULE"), metadata: ["team": "pos"]))
        let details = flags.details(FlagKey("f", default: false))
        #expect(details.value)
        #expect(details.variant == "on")
        #expect(details.reason.rawValue == "CUSTOM_RULE")
        #expect(details.metadata == ["team": "pos"])
    }

    @Test func killSwitchForcesSafeDefaultsExceptItself() {
        let flags = InMemoryFlagClient(["new_checkout": true, "plan_themeColor": "#FF0000"])
        flags.setKillSwitch(true)
        #expect(flags.isKillSwitchActive)
        #expect(flags.value(.newCheckout) == false)
        #expect(flags.value(.themeColor) == "#000000")
        #expect(flags.bool("kill_switch", default: false) == true)
        let details = flags.details(.newCheckout)
        #expect(details.reason == .disabled)
        #expect(details.source == .killSwitch)
        flags.setKillSwitch(false)
        #expect(flags.value(.newCheckout) == true)
        #expect(flags.recentEvents.contains(.killSwitch(active: true)))
        #expect(flags.recentEvents.last == .configurationChanged(keys: ["kill_switch", "new_checkout", "plan_themeColor"]))
    }

    @Test func customKillSwitchKey() {
        let flags = InMemoryFlagClient(["new_checkout": true, "panic": true], killSwitchKey: "panic")
        #expect(flags.value(.newCheckout) == false)
        #expect(flags.bool("panic", default: false))
    }

    @Test func typedSetAndRemove() {
        enum Theme: String, Sendable { case light, dark }
        let theme = FlagKey("theme", default: Theme.light)
        let flags = InMemoryFlagClient()
        flags.set(theme, .dark)
        #expect(flags.value(theme) == .dark)
        flags.remove("theme")
        #expect(flags.details(theme).errorCode == .flagNotFound)
        flags.replaceAll(with: ["theme": "dark", "x": 1])
        #expect(flags.snapshot.flags.count == 2)
    }

    @Test func changesAreStreamed() async {
        let flags = InMemoryFlagClient(["a": 1])
        let stream = flags.changes()
        flags.set("a", 2)
        flags.set("a", 2)  // no change: no element
        flags.set("b", true)
        let changes = await first(2, of: stream)
        #expect(changes.map(\.keys) == [["a"], ["b"]])
        #expect(changes.last?.snapshot.flags["b"]?.value == true)
    }

    @Test func valuesOfAKeyStartWithTheCurrentValue() async {
        let flags = InMemoryFlagClient(["new_checkout": false])
        let values = flags.values(of: .newCheckout)
        var iterator = values.makeAsyncIterator()
        #expect(await iterator.next() == false)
        flags.set("unrelated", 1)
        flags.set(.newCheckout, true)
        #expect(await iterator.next() == true)
    }

    @Test func statusAndEventsAreSettable() async {
        let flags = InMemoryFlagClient()
        let events = flags.events()
        flags.setStatus(.stale)
        #expect(flags.status == .stale)
        flags.emit(.stale(age: 90_000))
        #expect(await first(1, of: events) == [.stale(age: 90_000)])
        #expect(FlagEvent.stale(age: 1).openFeatureName == "PROVIDER_STALE")
        #expect(FlagEvent.killSwitch(active: true).openFeatureName == nil)
    }

    @Test func shutdownEndsStreams() async {
        let flags = InMemoryFlagClient()
        let changes = flags.changes()
        flags.shutdown()
        var n = 0
        for await _ in changes { n += 1 }
        #expect(n == 0)
        // Streams opened after shutdown end at once too.
        for await _ in flags.changes() { n += 1 }
        #expect(n == 0)
    }

    @Test func readsFromManyThreadsWhileWriting() async throws {
        let flags = InMemoryFlagClient(["n": 0])
        // One writer and two readers on threads of their own; every reader sees values only grow.
        let writer = Task.detached { try await blocking { for i in 1...2_000 { flags.set("n", .int(i)) } } }
        let readers = (0..<2).map { _ in
            Task.detached {
                try await blocking {
                    var last = 0
                    for _ in 0..<20_000 {
                        let now = flags.int("n", default: -1)
                        #expect(now >= last)
                        last = now
                    }
                }
            }
        }
        try await writer.value
        for reader in readers { try await reader.value }
        #expect(flags.int("n", default: -1) == 2_000)
    }
}
