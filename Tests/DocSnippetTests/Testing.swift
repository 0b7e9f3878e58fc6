// snippet: Testing in memory
import FeatureFlagsTesting
import Testing
// end snippet
// snippet: Testing provider
import FeatureFlags
import FeatureFlagsTesting
import FlagServer
// end snippet
// snippet: Testing conformance
import FeatureFlags
import FeatureFlagsTesting
import Testing
// end snippet
import Foundation
#if canImport(SwiftUI)
import SwiftUI
#endif

// snippet: Testing in memory
@Test func theNewCheckoutFollowsTheFlag() {
    let flags = InMemoryFlagClient(["new_checkout": true])
    let checkout = CheckoutViewModel(flags: flags)     // the README's view model
    #expect(checkout.showsNewCheckout)
}
// end snippet

func testingChangingValues() {
    let flags = InMemoryFlagClient()
    // snippet: Testing set
    flags.set(.newCheckout, false)                   // typed
    flags.set("plan_themeColor", "#2C3E50")          // raw
    flags.set("beta", entry: FlagEntry(value: nil, errorCode: .flagNotFound))  // a service error
    flags.remove("plan_themeColor")                  // FLAG_NOT_FOUND from now on
    flags.setKillSwitch(true)                        // every read returns its safe default
    flags.setStatus(.stale); flags.emit(.stale(age: 90_000))
    // end snippet
}

func testingOverrides(fetcher: FlagFetcher, store: LastKnownGoodStore) throws {
    // snippet: Testing overrides
    let overrides = FlagOverrides(allowed: BuildSettings.allowsFlagOverrides)
    let provider = FeatureFlagProvider(context: user, fetcher: fetcher, store: store,
                                       configuration: .init(overrides: overrides))
    try overrides.override(.newCheckout, true)  // details: source "override", reason STATIC
    try overrides.clearOverride(.newCheckout)   // the service's value again, at once
    try overrides.clearAll()
    // end snippet
    provider.shutdown()
}

// snippet: Testing build setting
enum BuildSettings {
    #if DEBUG
    static let allowsFlagOverrides = true      // Debug and internal (TestFlight) configurations
    #else
    static let allowsFlagOverrides = false     // Release
    #endif
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

#if canImport(SwiftUI)
// snippet: Testing debug screen
@available(iOS 17, macOS 14, *)
struct FlagDebugScreen: View {
    @State var inspector: FlagInspectorModel   // FlagInspectorModel(FlagInspector(client: provider,
                                               //   declaring: [FlagKey<Bool>.newCheckout], overrides: overrides))
    var body: some View {
        List {
            Section(inspector.isKillSwitchActive ? "Kill switch ON" : "Status \(inspector.status.rawValue)") {
                ForEach(inspector.rows) { row in
                    HStack {
                        Text(row.key).font(.body.monospaced())
                        Spacer()
                        if case .bool(let on)? = row.value, inspector.canOverride {
                            Toggle("", isOn: Binding(get: { on }, set: { inspector.override(row.key, .bool($0)) }))
                        } else {
                            Text(row.value.map { FlagJSON.string($0) } ?? "–")
                        }
                    }
                }
            }
            if let error = inspector.lastError { Text(error.description) }
        }
        .toolbar { Button("Clear all") { inspector.clearAllOverrides() } }
    }
}
// end snippet
#endif

/// Runs from the package's root (as `swift test` does): the example file is there.
@Test func testingTheRealProvider() async throws {
    // snippet: Testing provider
    let server = try FlagServer(file: "Docs/examples/flags.json")   // or FlagServer(document: …)
    defer { server.stop() }
    let clock = TestClock()
    let path = ManualReachability(true)
    let context = EvaluationContext(targetingKey: "cashier-7", attributes: ["venue": "venue-42"])
    let provider = FeatureFlagProvider(
        context: context,
        fetcher: FlagFetcher(endpoint: JSONFlagEndpoint(post: server.flagsURL), clock: clock),
        store: LastKnownGoodStore(fileURL: temporaryDirectory.appendingPathComponent("flags.lkg")),
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

/// An endpoint of the app's own service, as the conformance example checks it: the context
/// posted as JSON, the answer's `toggles` object read as the flags.
struct AcmeEndpoint: FlagEndpoint {
    let base: URL
    var name: String { "acme" }
    func request(for context: EvaluationContext, etag: String?) throws(FlagEndpointError) -> FlagRequest {
        try JSONFlagEndpoint(post: base).request(for: context, etag: etag)
    }
    func decode(_ response: FlagResponse, for context: EvaluationContext) throws(FlagEndpointError) -> DecodedFlags {
        guard case .object(let top)? = try? FlagJSON.parse(response.body), case .object(let toggles)? = top["toggles"] else {
            throw FlagEndpointError(.parseError, "acme: no toggles object")
        }
        return .flags(toggles.mapValues { FlagEntry(value: $0) })
    }
}

// snippet: Testing conformance
@Test func acmeEndpointConforms() async {
    let sample = FlagEndpointConformance.Sample(
        context: EvaluationContext(targetingKey: "user-1", attributes: ["venue": "venue-42"]),
        body: Array(#"{"toggles":{"new_checkout":true,"limit":750}}"#.utf8),
        expected: ["new_checkout": true, "limit": 750])
    let report = await FlagEndpointConformance(endpoint: AcmeEndpoint(base: url), sample: sample).run()
    #expect(report.failures == [], "\(report)")
}
// end snippet
