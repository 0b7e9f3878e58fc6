import FeatureFlags
import Foundation

// snippet: Hooks example
struct FlagLog: FlagHook {
    func after(_ context: FlagHookContext, details: FlagDetails<FlagValue?>, data: inout [String: any Sendable], hints: [String: FlagValue]) {
        logger.debug("\(context.flagKey) → \(details.reason) from \(details.source)")
    }
}

struct Span: FlagHook {
    func before(_ context: FlagHookContext, data: inout [String: any Sendable], hints: [String: FlagValue]) {
        data["span"] = tracer.start("flag \(context.flagKey)")
    }
    func finally(_ context: FlagHookContext, details: FlagDetails<FlagValue?>, data: inout [String: any Sendable], hints: [String: FlagValue]) {
        (data["span"] as? TraceSpan)?.end()
    }
}
// end snippet

func hooksExample(fetcher: FlagFetcher, store: LastKnownGoodStore) {
    // snippet: Hooks example
    var configuration = FeatureFlagProvider.Configuration()
    configuration.hooks = [FlagLog()]                    // client hooks, at creation
    let provider = FeatureFlagProvider(context: user, fetcher: fetcher, store: store, configuration: configuration)
    provider.addHooks(Span())                           // … or later
    let d = provider.details(.newCheckout, hooks: [AuditHook()], hints: ["screen": "cart"])  // this read's own
    // end snippet
    _ = d
}

func hooksTracking(flags: any FeatureFlagClient) {
    // snippet: Hooks tracking
    flags.track("checkout_completed", value: 42.5, attributes: ["items": 3])
    flags.track("opened_cart")
    // end snippet
}

func hooksExposures() {
    // snippet: Hooks exposures
    var configuration = FeatureFlagProvider.Configuration()
    configuration.exposures = true                          // off by default
    configuration.eventHandler = { event in
        if let exposure = event.exposure { analytics.exposure(exposure.flag, exposure.variant, exposure.contextFingerprint) }
    }
    // end snippet
    _ = configuration
}
