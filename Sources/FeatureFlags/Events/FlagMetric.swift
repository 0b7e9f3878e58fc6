/// A number worth recording, derived from a ``FlagEvent``, ready for any metrics backend (see
/// `Docs/Observability.md`). Names follow the `rc_` convention of remote-configuration dashboards.
public struct FlagMetric: Sendable, Equatable, CustomStringConvertible {
    /// The metric's name, e.g. `rc_fetch_latency_ms`.
    public let name: String
    /// How a backend should record it: `counter` (add the value to a running total), `gauge`
    /// (replace the current level with the value) or `timer_ms` (a duration in milliseconds).
    public let kind: String
    /// The amount (1 for a single occurrence).
    public let value: Double
    /// Low-cardinality labels (never context attributes or flag values).
    public let dimensions: [String: String]

    /// A metric.
    public init(name: String, kind: String, value: Double, dimensions: [String: String] = [:]) {
        self.name = name
        self.kind = kind
        self.value = value
        self.dimensions = dimensions
    }

    /// `name{dimensions} value (kind)`, on one line (control characters in a label, such as a
    /// flag name from a service, escaped as `\u{…}`).
    public var description: String {
        let labels = dimensions.keys.sorted().map { "\($0)=\(dimensions[$0] ?? "")" }.joined(separator: ",")
        let number = value.rounded() == value && abs(value) < 1e15 ? String(Int(value)) : String(value)
        return FlagText.printable("\(name)\(labels.isEmpty ? "" : "{\(labels)}") \(number) (\(kind))")
    }
}

extension FlagEvent {
    /// The metric this event stands for, or nil for events that are not measurements.
    ///
    /// | Event | Metric |
    /// | --- | --- |
    /// | ``activated(version:latencyMilliseconds:)`` | `rc_activation_success` counter |
    /// | ``fetchCompleted(latencyMilliseconds:outcome:)`` | `rc_fetch_latency_ms` timer, `result` label |
    /// | ``stale(age:)`` | `rc_stale_config` gauge = 1 |
    /// | ``payloadRejected(violations:fingerprint:)`` | `rc_schema_validation_errors` counter += violations |
    /// | ``killSwitch(active:)`` | `rc_killswitch_active` gauge = 1 or 0 |
    /// | ``unknownKeys(_:)`` | `rc_unknown_keys` counter += keys |
    /// | ``unknownValues(flag:values:)`` | `rc_unknown_values` counter += values, `flag` label |
    /// | ``fetchFailed(_:)`` | `rc_fetch_failures` counter, `code` label |
    /// | ``streamClosed(stream:reason:retryInMilliseconds:)`` | `rc_stream_disconnects` counter |
    /// | ``safeModeEntered(reason:)`` / ``safeModeLeft(reason:)`` | `rc_safe_mode` gauge = 1 or 0 |
    /// | ``eventsDropped(count:)`` | `rc_events_dropped` counter += count |
    public var metric: FlagMetric? {
        let d = details
        switch kind {
        case .activated:
            return FlagMetric(name: "rc_activation_success", kind: "counter", value: 1)
        case .fetchCompleted:
            return FlagMetric(
                name: "rc_fetch_latency_ms", kind: "timer_ms", value: Double(d.latencyMilliseconds ?? 0),
                dimensions: ["result": d.outcome?.name ?? "-"])
        case .stale:
            return FlagMetric(name: "rc_stale_config", kind: "gauge", value: 1)
        case .payloadRejected:
            return FlagMetric(name: "rc_schema_validation_errors", kind: "counter", value: Double(d.violations?.count ?? 0))
        case .killSwitch:
            return FlagMetric(name: "rc_killswitch_active", kind: "gauge", value: d.active == true ? 1 : 0)
        case .unknownKeys:
            return FlagMetric(name: "rc_unknown_keys", kind: "counter", value: Double(d.keys?.count ?? 0))
        case .unknownValues:
            return FlagMetric(
                name: "rc_unknown_values", kind: "counter", value: Double(d.values?.count ?? 0), dimensions: ["flag": d.flag ?? "-"])
        case .fetchFailed:
            return FlagMetric(name: "rc_fetch_failures", kind: "counter", value: 1, dimensions: ["code": d.errorCode?.rawValue ?? "-"])
        case .streamClosed:
            return FlagMetric(name: "rc_stream_disconnects", kind: "counter", value: 1)
        case .safeModeEntered:
            return FlagMetric(name: "rc_safe_mode", kind: "gauge", value: 1)
        case .safeModeLeft:
            return FlagMetric(name: "rc_safe_mode", kind: "gauge", value: 0)
        case .eventsDropped:
            return FlagMetric(name: "rc_events_dropped", kind: "counter", value: Double(d.dropped ?? 0))
        default:
            return nil
        }
    }
}
