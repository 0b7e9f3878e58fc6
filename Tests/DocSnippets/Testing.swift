import FeatureFlags
import FeatureFlagsUI
import FeatureFlagsTesting
import Foundation
#if canImport(SwiftUI)
import SwiftUI
#endif

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

#if canImport(SwiftUI)
// snippet: Testing debug screen
@available(iOS 17, macOS 14, tvOS 17, *)
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
                            Text(row.value?.description ?? "–")
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

/// An endpoint of the app's own service, as the conformance example checks it: the context
/// posted as JSON, the answer's `toggles` object read as the flags.
func acmeEndpoint(base: URL) -> FlagEndpoint {
    FlagEndpoint(
        name: "acme",
        request: { context, etag throws(FlagError) in
            try FlagEndpoint.json(post: base).request(for: context, etag: etag)
        },
        decode: { response, _ throws(FlagError) in
            guard case .object(let top)? = try? FlagValue(json: response.body), case .object(let toggles)? = top["toggles"] else {
                throw FlagError(.parseError, "acme: no toggles object")
            }
            return .flags(toggles.mapValues { FlagEntry(value: $0) })
        })
}
