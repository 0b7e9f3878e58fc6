// snippet: iOS provider
import FeatureFlags
import Foundation
// end snippet
// snippet: iOS logout
import FeatureFlags
// end snippet
#if canImport(SwiftUI)
// snippet: iOS app
import FeatureFlags
import SwiftUI
// end snippet
// snippet: iOS views
import FeatureFlags
import FeatureFlagsUI
import SwiftUI
// end snippet
#endif
#if canImport(Darwin)
// snippet: iOS app group
import FeatureFlags
import Foundation
// end snippet
#endif

// snippet: iOS provider
extension FlagKey where Value == Bool {
    static let expressCheckout = FlagKey("express_checkout", default: false)
}

/// The app's flags: built once, at launch.
func makeFlags(for user: EvaluationContext) -> FeatureFlagProvider {
    var configuration = FeatureFlagProvider.Configuration()
    if let defaults = Bundle.main.url(forResource: "flag-defaults", withExtension: "json") {
        configuration.bundledDefaults = .jsonFile(defaults)       // Docs/BundledDefaults.md
    }
    configuration.crashLoopGuard = CrashLoopGuard()              // Docs/KillPath.md
    return FeatureFlagProvider.start(                             // serves, fetches, polls until shutdown()
        context: user,
        endpoint: .json(post: URL(string: "https://flags.example.com/flags")!),
        fetch: .init(headers: ["Authorization": "Bearer …"]),
        configuration: configuration)
}
// end snippet

#if canImport(SwiftUI)
// snippet: iOS app
struct POSApp: App {                                   // @main in your app
    let flags = makeFlags(for: EvaluationContext(targetingKey: nil, attributes: ["venue": "venue-7"]))
    @State private var launched = false

    var body: some Scene {
        WindowGroup {
            Group {
                if launched { RootView(flags: flags) } else { ProgressView() }
            }
            .task {
                _ = await flags.waitUntilReady(timeout: .seconds(2))
                launched = true                             // fresh values, or the fallback after 2 s
            }
        }
    }
}
// end snippet

// snippet: iOS views
struct RootView: View {
    let flags: any FeatureFlagClient

    var body: some View {
        if #available(iOS 17, macOS 14, tvOS 17, watchOS 10, *) {
            CheckoutButton(flags: ObservableFlags(client: flags))
        } else {
            LegacyCheckoutButton(flags: ObservableFlagsObject(client: flags))
        }
    }
}

@available(iOS 17, macOS 14, tvOS 17, watchOS 10, *)
struct CheckoutButton: View {
    @State var flags: ObservableFlags

    var body: some View {
        Button(flags.value(.expressCheckout) ? "Express checkout" : "Checkout") {}
            .disabled(flags.isKillSwitchActive)
    }
}

struct LegacyCheckoutButton: View {
    @StateObject var flags: ObservableFlagsObject

    var body: some View {
        Button(flags.value(.expressCheckout) ? "Express checkout" : "Checkout") {}
            .disabled(flags.isKillSwitchActive)
    }
}
// end snippet
#endif

// snippet: iOS logout
/// The user signed in, switched venue, or signed out.
func userChanged(to user: EvaluationContext?, flags: FeatureFlagProvider, store: LastKnownGoodStore,
                 previous: EvaluationContext?) throws {
    guard let user else {
        // Signed out: serve the anonymous context, and forget what the last user was served.
        flags.identify(EvaluationContext(targetingKey: nil, attributes: ["venue": "venue-7"]))
        if let previous { try store.remove(previous) }
        return
    }
    flags.identify(user)       // serves user's stored values at once, then one fetch
}
// end snippet

#if canImport(Darwin)
// snippet: iOS app group
/// The widget's flags: what the app last stored for this user, read-only.
func widgetFlags(for user: EvaluationContext) -> FallbackClient? {
    guard let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.com.example.pos")
    else { return nil }
    return FallbackClient(fileURL: container.appendingPathComponent("FeatureFlags/flags.lkg"), context: user)
}
// end snippet
#endif
