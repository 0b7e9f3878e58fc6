#if canImport(SwiftUI) && !os(tvOS)
import FeatureFlags
import FeatureFlagsUI
import SwiftUI

/// The debug menu's flag screen: every flag with its value and where it comes from, a toggle
/// per Boolean flag that overrides it on this device, and the last events. Built where SwiftUI
/// exists (Apple platforms but tvOS, which has no swipe actions); Docs/Testing.md shows it.
@available(iOS 17, macOS 14, tvOS 17, watchOS 10, *)
struct FlagDebugScreen: View {
    @State var inspector: FlagInspectorModel

    var body: some View {
        List {
            Section(inspector.isKillSwitchActive ? "Kill switch ON — every flag reads its safe default" : "Status \(inspector.status.rawValue)") {
                ForEach(inspector.rows) { row in
                    VStack(alignment: .leading) {
                        HStack {
                            Text(row.key).font(.body.monospaced())
                            Spacer()
                            if case .bool(let on)? = row.value, inspector.canOverride {
                                Toggle("", isOn: Binding(get: { on }, set: { inspector.override(row.key, .bool($0)) })).labelsHidden()
                            } else {
                                Text(row.value.map { FlagJSON.string($0) } ?? "–").font(.caption.monospaced())
                            }
                        }
                        Text("\(row.source.rawValue) · \(row.reason.rawValue)\(row.isOverridden ? " · overridden" : "")")
                            .font(.caption).foregroundStyle(.secondary)
                    }
                    .swipeActions { if row.isOverridden { Button("Clear") { inspector.clearOverride(row.key) } } }
                }
            }
            if let error = inspector.lastError { Section("Override failed") { Text(error.description) } }
            Section("Recent events") {
                ForEach(Array(inspector.events.suffix(10).enumerated()), id: \.offset) { Text($0.element.description).font(.caption2) }
            }
        }
        .toolbar { Button("Clear all") { inspector.clearAllOverrides() }.disabled(!inspector.canOverride) }
        .refreshable { inspector.refresh() }
    }
}
#endif
