/// A number derived from a ``FlagEvent`` for any metrics backend, named `rc_…` (`Docs/Observability.md`).
public struct FlagMetric: Sendable, Equatable, CustomStringConvertible {
    /// The metric's name, e.g. `rc_fetch_latency_ms`.
    public let name: String
    /// How to record it: `counter` (add to a total), `gauge` (replace the level) or `timer_ms` (milliseconds).
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

    /// `name{dimensions} value (kind)` on one line, control characters escaped as `\u{…}`.
    public var description: String {
        let labels = dimensions.keys.sorted().map { "\($0)=\(dimensions[$0] ?? "")" }.joined(separator: ",")
        let number = value.rounded() == value && abs(value) < 1e15 ? String(Int(value)) : String(value)
        return FlagText.printable("\(name)\(labels.isEmpty ? "" : "{\(labels)}") \(number) (\(kind))")
    }
}

extension FlagEvent {
    /// The metric this event stands for, or nil for events that are not measurements (table: `Docs/Observability.md`).
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
        case .servicesDisagree:
            return FlagMetric(name: "rc_service_mismatches", kind: "counter", value: 1, dimensions: ["flag": d.flag ?? "-"])
        case .eventsDropped:
            return FlagMetric(name: "rc_events_dropped", kind: "counter", value: Double(d.dropped ?? 0))
        default:
            return nil
        }
    }
}
