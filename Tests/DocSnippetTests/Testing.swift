// snippet: Testing in memory
import FeatureFlagsTesting
import Testing
// end snippet
// snippet: Testing provider
import FeatureFlags
import FeatureFlagsTesting
import FlagServer
// end snippet
// snippet: Testing past
@Test func relaunchOfflineWithTheNewCheckoutHeld() async throws {
    let store = LastKnownGoodStore.inMemory()
    try await store.remember(["new_checkout": true], for: cashier, version: "v7", age: .seconds(3_600))
    let flags = FeatureFlagProvider.forTesting(context: cashier, store: store, reachability: ManualReachability(false))
    defer { flags.shutdown() }
    #expect(flags.value(.newCheckout) && flags.details(.newCheckout).source == .fallback)
}

@Test func firstLaunchOfflineServesTheCodeDefaults() {
    let flags = FeatureFlagProvider.forTesting(context: cashier, store: .inMemory(), reachability: ManualReachability(false))
    defer { flags.shutdown() }
    #expect(!flags.value(.newCheckout) && flags.details(.newCheckout).source == .codeDefault)
}

@Test func theKillHoldsAfterRelaunch() async throws {
    let store = LastKnownGoodStore.inMemory()
    try await store.remember(["new_checkout": true, "kill_switch": true], for: cashier)
    let flags = FeatureFlagProvider.forTesting(context: cashier, store: store, reachability: ManualReachability(false))
    defer { flags.shutdown() }
    #expect(flags.isKillSwitchActive && !flags.value(.newCheckout))
}
// end snippet

/// The cashier the past-launch snippets serve.
let cashier = EvaluationContext(targetingKey: "cashier-7", attributes: ["venue": "venue-42"])

// snippet: Testing conformance
import FeatureFlags
import FeatureFlagsTesting
import Testing
// end snippet
@testable import DocSnippets
import Foundation

// snippet: Testing in memory
@Test func theNewCheckoutFollowsTheFlag() {
    let flags = InMemoryFlagClient(["new_checkout": true])
    let checkout = CheckoutViewModel(flags: flags)     // the README's view model
    #expect(checkout.showsNewCheckout)
}
// end snippet

#if os(iOS)
import XCTest

func testingUITest(fixtureURL: URL) {
    // snippet: Testing UI test
    // In the UI test target:
    let app = XCUIApplication()
    app.launchArguments += ["-FeatureFlagOverrides", fixtureURL.path]               // a file the app can read
    app.launchEnvironment["FEATURE_FLAG_OVERRIDES"] = #"{"new_checkout": true}"#     // or the JSON itself
    app.launch()
    // end snippet
}
#endif

/// Runs from the package's root (as `swift test` does): the example file is there.
@Test func testingTheRealProvider() async throws {
    // snippet: Testing provider
    let server = try FlagServer(file: "Docs/examples/flags.json")   // or FlagServer(document: …)
    defer { server.stop() }
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("flags-\(UUID()).lkg")  // this test's own
    defer { for f in [file.path, file.path + ".lock"] { try? FileManager.default.removeItem(atPath: f) } }
    let clock = TestClock()
    let path = ManualReachability(true)
    let context = EvaluationContext(targetingKey: "cashier-7", attributes: ["venue": "venue-42"])
    let provider = FeatureFlagProvider(
        context: context,
        fetcher: FlagFetcher(endpoint: .json(post: server.flagsURL), clock: clock),
        store: LastKnownGoodStore(fileURL: file),
        reachability: path,
        clock: clock)
    defer { provider.shutdown() }

    let run = Task { await provider.run() }
    #expect(await provider.waitUntilReady(timeout: .seconds(2)) == .ready)

    await clock.sleepers(atLeast: 1)   // the poll timer is waiting
    clock.advance(by: .seconds(300))   // the next poll, at once
    // end snippet
    #expect(provider.value(.newCheckout))
    provider.shutdown()
    await run.value
}

// snippet: Testing conformance
@Test func acmeEndpointConforms() async {
    let sample = FlagEndpointConformance.Sample(
        context: EvaluationContext(targetingKey: "user-1", attributes: ["venue": "venue-42"]),
        body: Array(#"{"toggles":{"new_checkout":true,"limit":750}}"#.utf8),
        expected: ["new_checkout": true, "limit": 750])
    let report = await FlagEndpointConformance(endpoint: acmeEndpoint(base: url), sample: sample).run()
    #expect(report.failures == [], "\(report)")
}
// end snippet
