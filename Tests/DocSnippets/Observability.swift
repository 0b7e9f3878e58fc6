// snippet: Observability telemetry
import FeatureFlags
// end snippet
import Foundation

func observabilityTwoWays(provider: FeatureFlagProvider) {
    // snippet: Observability two ways
    // 1. An AsyncSequence, from any client.
    Task {
        for await event in provider.events() { print(event) }
    }

    // 2. A handler on the provider's configuration: every event, in order, on a private serial
    //    queue (never under the provider's locks, so the handler may read flags or call identify).
    let configuration = FeatureFlagProvider.Configuration(eventHandler: { event in
        if let metric = event.metric { print(metric) }   // "rc_fetch_latency_ms{result=updated} 84 (timer_ms)"
    })
    // end snippet
    _ = configuration
}

// snippet: Observability telemetry
/// Sends flag events to the app's logger and metrics backend.
struct FlagTelemetry: Sendable {
    let logger: AppLogger
    let metrics: AppMetrics

    func handle(_ event: FlagEvent) {
        switch event.kind {
        case .payloadRejected:
            let violations = (event.violations ?? []).map(\.description).joined(separator: "; ")
            logger.error("flag payload \(event.payloadFingerprint ?? "-") rejected; last-known-good kept: \(violations)")
        case .fetchFailed:
            logger.warning("flag fetch failed: \(event.fetchError.map(String.init(describing:)) ?? "-")")
        case .killSwitch:
            logger.warning("kill switch \(event.killSwitchActive == true ? "on: limited mode" : "off")")
        case .unknownValues:
            logger.info("unknown list members of \(event.keys?.first ?? "-"): \(event.unknownValues ?? [])")
        default:
            logger.debug("\(event)")
        }
        guard let metric = event.metric else { return }
        let dimensions = metric.dimensions.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        switch metric.kind {
        case "counter": metrics.count(metric.name, by: Int(metric.value), dimensions: dimensions)
        case "gauge": metrics.gauge(metric.name, metric.value, dimensions: dimensions)
        default: metrics.time(metric.name, milliseconds: metric.value, dimensions: dimensions)  // "timer_ms"
        }
    }
}
// end snippet

func observabilityTelemetry(fetcher: FlagFetcher, store: LastKnownGoodStore, schema: FlagSchema) {
    // snippet: Observability telemetry
    let telemetry = FlagTelemetry(logger: AppLogger(), metrics: AppMetrics())
    let provider = FeatureFlagProvider(
        context: user, fetcher: fetcher, store: store,
        configuration: .init(schema: schema, eventHandler: { telemetry.handle($0) }))
    // end snippet
    provider.shutdown()
}

@MainActor
func observabilityLimitedMode(flags: any FeatureFlagClient) {
    var banner = ""
    // snippet: Observability limited mode
    if flags.isKillSwitchActive { banner = "Some features are temporarily unavailable" }
    // end snippet
    _ = banner
}
