#if canImport(Observation)
public import FeatureFlags
public import Foundation
// Swift 6.1 and later count the `@Observable` conformance of this public class as a public use
// of Observation; Xcode 16.0's Swift 6.0 does not, and warns about a public import.
#if compiler(<6.1) && canImport(Darwin)
import Observation
#else
public import Observation
#endif

/// A debug screen's model: a ``FlagInspector``'s rows, the client's status and its last events,
/// kept current as values, overrides and the status change — and the overrides' controls,
/// with the last error they raised. `@Observable`, so a SwiftUI view that reads it re-renders;
/// works on Linux too (Observation ships with the toolchain). Docs/Testing.md has a SwiftUI
/// view built on it.
///
/// ```swift
/// @State var inspector = FlagInspectorModel(FlagInspector(client: provider, declaring: Flags.all,
///                                                         overrides: overrides))
/// ```
///
/// Updates arrive on the main actor. Ages are as of ``refreshedAt``.
@available(iOS 17, macOS 14, tvOS 17, watchOS 10, *)
@MainActor
@Observable
public final class FlagInspectorModel {
    /// Every known key's row, sorted by name.
    public private(set) var rows: [FlagInspectorRow] = []
    /// The client's status.
    public private(set) var status: ProviderStatus
    /// Whether the kill switch is on.
    public private(set) var isKillSwitchActive: Bool
    /// The client's last events, oldest first (at most ``eventLimit``), exposures and tracked
    /// events included.
    public private(set) var events: [FlagEvent] = []
    /// When the rows were last computed.
    public private(set) var refreshedAt: Date
    /// What the last override, clear or preset load through this model failed with; nil
    /// after one that succeeded.
    public private(set) var lastError: FlagError?

    /// How many events are kept.
    public let eventLimit = 50
    /// The inspector the rows come from.
    @ObservationIgnored public let inspector: FlagInspector
    @ObservationIgnored private let now: @Sendable () -> Date
    @ObservationIgnored private let tasks = Locked<[Task<Void, Never>]>([])

    /// A model of `inspector`, following its client until ``stop()`` or until it goes away.
    public init(_ inspector: FlagInspector, now: @escaping @Sendable () -> Date = { Date() }) {
        self.inspector = inspector
        self.now = now
        status = inspector.client.status
        isKillSwitchActive = inspector.client.isKillSwitchActive
        refreshedAt = now()
        // Subscribed before the first refresh: a change in between is in the rows or comes on
        // the stream, never in neither.
        let changes = inspector.client.changes()
        let events = inspector.client.events()
        refresh()
        let onChange = Task { [weak self] in
            for await _ in changes {
                guard let self else { return }
                self.refresh()
            }
        }
        let onEvent = Task { [weak self] in
            for await event in events {
                guard let self else { return }
                self.record(event)
            }
        }
        tasks.withLock { $0 = [onChange, onEvent] }
    }

    /// Computes the rows and the status again (the model does it on every change; call it to
    /// update ages).
    public func refresh() {
        rows = inspector.rows()
        status = inspector.client.status
        isKillSwitchActive = inspector.client.isKillSwitchActive
        refreshedAt = now()
    }

    /// The rows and events as the text `flagctl eval` prints.
    public var text: String { inspector.text(events: events) }

    /// Whether overrides can be set here: the inspector has overrides and the build allows them.
    public var canOverride: Bool { inspector.overrides?.isAllowed ?? false }

    /// Overrides `name` with `value` (see ``FlagOverrides/override(_:_:)``); a failure is kept
    /// in ``lastError``.
    public func override(_ name: String, _ value: FlagValue) {
        perform { overrides throws(FlagError) in try overrides.override(name, value) }
    }

    /// Clears the override of `name`; a failure is kept in ``lastError``.
    public func clearOverride(_ name: String) {
        perform { overrides throws(FlagError) in try overrides.clearOverride(name) }
    }

    /// Clears every override; a failure is kept in ``lastError``.
    public func clearAllOverrides() {
        perform { overrides throws(FlagError) in try overrides.clearAll() }
    }

    private func perform(_ change: (FlagOverrides) throws(FlagError) -> Void) {
        guard let overrides = inspector.overrides else {
            lastError = .overridesForbidden
            return
        }
        do {
            try change(overrides)
            lastError = nil
        } catch {
            lastError = error
        }
        refresh()
    }

    private func record(_ event: FlagEvent) {
        events.append(event)
        if events.count > eventLimit { events.removeFirst(events.count - eventLimit) }
        // A status that moves relabels every row (a failed fetch: the fallback's values, `CACHED`;
        // past their TTL, `STALE`) though no value changed and no change arrives.
        if inspector.client.status != status || inspector.client.isKillSwitchActive != isKillSwitchActive { refresh() }
    }

    /// Stops following the client. Idempotent.
    public func stop() {
        for task in tasks.withLock({ $0 }) { task.cancel() }
    }

    deinit {
        for task in tasks.withLock({ $0 }) { task.cancel() }
    }
}
#endif
