public import FeatureFlags
import Foundation

/// Everything a debug screen shows about a client's flags: every known key — those the app
/// declares plus every key the served snapshot and the overrides hold — with its value,
/// source, reason, variant, version, age and whether it is overridden, and the client's
/// status. Reads for the inspector run no hooks and report no exposures.
///
/// ```swift
/// let inspector = FlagInspector(client: provider, declaring: [Flags.newCheckout, Flags.tipPercent],
///                               overrides: overrides)
/// print(inspector.text())       // the table `flagctl eval` prints
/// ```
///
/// ``FlagInspectorModel`` is the same as an `@Observable` object for SwiftUI.
public struct FlagInspector: Sendable {
    /// The client inspected.
    public let client: any FeatureFlagClient
    /// The keys the app declares, by name.
    public let declared: [String: any InspectableKey]
    /// The overrides the client carries, if any.
    public let overrides: FlagOverrides?

    /// An inspector of `client` that lists `declaring` even when nothing serves them.
    public init(client: any FeatureFlagClient, declaring keys: [any InspectableKey] = [], overrides: FlagOverrides? = nil) {
        self.client = client
        var declared: [String: any InspectableKey] = [:]
        for key in keys where declared[key.name] == nil { declared[key.name] = key }
        self.declared = declared
        self.overrides = overrides
    }

    /// Every known key's row, sorted by name.
    public func rows() -> [FlagInspectorRow] {
        var names = Set(declared.keys).union(client.snapshot.flags.keys)
        let overridden = overrides?.values ?? [:]
        names.formUnion(overridden.keys)
        return names.sorted().map { row($0, overridden: overridden[$0] != nil) }
    }

    /// The row of `name`.
    public func row(_ name: String) -> FlagInspectorRow { row(name, overridden: overrides?.value(name) != nil) }

    private func row(_ name: String, overridden: Bool) -> FlagInspectorRow {
        let details = client.flagDetails(name)
        let key = declared[name]
        var value = details.value ?? key?.defaultFlagValue
        var reason = details.reason
        var errorCode = details.errorCode
        var source = details.source
        if let key, let raw = details.value, !key.accepts(raw) {
            value = key.defaultFlagValue
            reason = .error
            errorCode = .typeMismatch
            source = .codeDefault
        }
        return FlagInspectorRow(
            key: name, value: value, declaredType: key?.valueType, source: source, reason: reason, errorCode: errorCode,
            variant: details.variant, version: details.snapshotVersion, age: details.age, isOverridden: overridden,
            service: details.service)
    }

    /// The rows as a table, headed by the status line, followed by `events` (oldest first) —
    /// the text `flagctl eval` prints, for a debug screen's "copy" button or a bug report.
    /// Control characters in names and values are escaped.
    public func text(events: [FlagEvent] = []) -> String {
        var lines = [statusLine()]
        lines += Self.table(rows())
        if !events.isEmpty {
            lines.append("recent events:")
            lines += events.map { "  " + FlagText.printable($0.description) }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `status READY · kill switch off · 2 overrides`.
    public func statusLine() -> String {
        var parts = ["status \(client.status.rawValue)", "kill switch \(client.isKillSwitchActive ? "ON" : "off")"]
        if let overrides {
            let count = overrides.values.count
            parts.append(overrides.isAllowed ? "\(count) override\(count == 1 ? "" : "s")" : "overrides forbidden in this build")
        }
        return parts.joined(separator: " · ")
    }

    /// `rows` as aligned columns: FLAG, VALUE, SOURCE, REASON, VARIANT, VERSION, AGE, and
    /// OVERRIDE when any row is overridden.
    public static func table(_ rows: [FlagInspectorRow]) -> [String] {
        let marks = rows.contains(where: \.isOverridden)
        let services = rows.contains { $0.service != nil }
        var cells = [["FLAG", "VALUE", "SOURCE"] + (services ? ["SERVICE"] : []) + ["REASON", "VARIANT", "VERSION", "AGE"] + (marks ? ["OVERRIDE"] : [])]
        for row in rows {
            let value = row.value.map { FlagJSON.string($0) } ?? "-"
            var line = [FlagText.printable(row.key), FlagText.clip(value), row.source.rawValue]
            if services { line.append(FlagText.printable(row.service ?? "-")) }
            line += [
                row.errorCode.map { "\(row.reason.rawValue) \($0.rawValue)" } ?? row.reason.rawValue,
                FlagText.printable(row.variant ?? "-"), FlagText.printable(row.version ?? "-"), FlagText.age(row.age),
            ]
            if marks { line.append(row.isOverridden ? "yes" : "") }
            cells.append(line)
        }
        return FlagText.columns(cells)
    }
}
