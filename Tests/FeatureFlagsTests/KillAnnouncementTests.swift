import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting
import FlagServer

/// A kill is announced the same way whatever carried it — a valid payload, a payload the schema
/// rejects, a stream, a hold stored by an earlier launch, another context's answer: one
/// `kill_switch` event, and a change listing every key whose effective value changed (every
/// key the app was served: they all fell to their safe defaults). A view-model that follows one
/// flag must hear that its value just fell to the default.
@Suite("Kill announcements", .hangLimit())
struct KillAnnouncementTests {
    static let schema = FeatureFlagProvider.Configuration(schema: .seedExample)

    /// Every change delivered to `changes` until the client's streams end.
    static func collect(_ changes: AsyncStream<FlagChange>) async -> [FlagChange] {
        var seen: [FlagChange] = []
        for await change in changes { seen.append(change) }
        return seen
    }

    /// One `kill_switch` on event among `events`, and a change, killed, whose keys include every
    /// one of `keys`.
    static func expectAnnounced(
        events: [FlagEvent], changes: [FlagChange], keys: some Collection<String>, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let kills = events.filter { $0.kind == .killSwitch }
        #expect(kills.count == 1, "kill_switch events: \(kills); all events: \(events.map(\.kind))", sourceLocation: sourceLocation)
        #expect(kills.first?.killSwitchActive == true, sourceLocation: sourceLocation)
        let killing = changes.filter(\.killSwitchActive)
        #expect(killing.count == 1, "changes: \(changes.map { ($0.keys.sorted(), $0.killSwitchActive) })", sourceLocation: sourceLocation)
        if let change = killing.first {
            let missing = Set(keys).subtracting(change.keys)
            #expect(missing.isEmpty, "the change does not list \(missing.sorted())", sourceLocation: sourceLocation)
        }
    }

    @Test func aValidPayloadAnnouncesItsKill() async throws {
        let dir = TempDir()
        try seedFallback(dir, auraLinkPersonal)
        let f = try ProviderFixture(document: ServerDocument.seedDefaults(["kill_switch": true]), dir: dir)
        let changes = f.provider.changes()
        _ = await f.provider.refresh()
        #expect(f.provider.isKillSwitchActive)
        f.stop()
        Self.expectAnnounced(events: f.provider.recentEvents, changes: await Self.collect(changes), keys: auraLinkPersonal.keys)
    }

    @Test func aPayloadTheSchemaRejectsAnnouncesItsKill() async throws {
        let dir = TempDir()
        try seedFallback(dir, auraLinkPersonal)
        let f = try ProviderFixture(
            document: ServerDocument.seedDefaults(["plan_themeColor": "#12345G", "kill_switch": true]), dir: dir, configuration: Self.schema)
        let changes = f.provider.changes()
        guard case .rejected = await f.provider.refresh() else {
            Issue.record("the payload was not rejected")
            return f.stop()
        }
        #expect(f.provider.isKillSwitchActive)
        #expect(f.provider.value(FlagKey("plan_themeColor", default: "#000000")) == "#000000")
        f.stop()
        let events = f.provider.recentEvents
        Self.expectAnnounced(events: events, changes: await Self.collect(changes), keys: auraLinkPersonal.keys)
        // The rejection is reported before the kill it carried.
        let kinds = events.map(\.kind)
        let rejected = try #require(kinds.firstIndex(of: .payloadRejected))
        let killed = try #require(kinds.firstIndex(of: .killSwitch))
        #expect(rejected < killed)
    }

    @Test func aRejectedPayloadWithoutAKillAnnouncesNoChange() async throws {
        let dir = TempDir()
        try seedFallback(dir, auraLinkPersonal)
        let f = try ProviderFixture(document: ServerDocument.seedDefaults(["plan_themeColor": "#12345G"]), dir: dir, configuration: Self.schema)
        let changes = f.provider.changes()
        guard case .rejected = await f.provider.refresh() else {
            Issue.record("the payload was not rejected")
            return f.stop()
        }
        f.stop()
        #expect(await Self.collect(changes).isEmpty)
        #expect(!f.provider.recentEvents.contains { $0.kind == .killSwitch })
    }

    @Test func aKillInARejectedPayloadWhileAlreadyHeldIsNotAnnouncedTwice() async throws {
        let dir = TempDir()
        try seedFallback(dir, auraLinkPersonal)
        let f = try ProviderFixture(
            document: ServerDocument.seedDefaults(["plan_themeColor": "#12345G", "kill_switch": true]), dir: dir, configuration: Self.schema)
        defer { f.stop() }
        let changes = f.provider.changes()
        for _ in 0..<3 { _ = await f.provider.refresh() }
        f.provider.shutdown()
        #expect(f.provider.recentEvents.filter { $0.kind == .killSwitch }.count == 1)
        #expect(await Self.collect(changes).filter(\.killSwitchActive).count == 1)
    }

    @Test(arguments: [false, true])
    func aStreamedKillIsAnnounced(rejectedBySchema: Bool) async throws {
        var configuration = rejectedBySchema ? Self.schema : FeatureFlagProvider.Configuration()
        configuration.streamBackoff = Backoff(initial: .milliseconds(20), maximum: .milliseconds(100))
        let f = try ProviderFixture(document: ServerDocument.seedDefaults([:]), configuration: configuration, streams: true)
        defer { f.stop() }
        let loop = await ProviderStreamTests.start(f)
        defer { loop.cancel() }
        let served = Set(f.provider.snapshot.flags.keys)
        let changes = f.provider.changes()
        var killing = ServerDocument.seedDefaults(["kill_switch": true])
        if rejectedBySchema { killing.base.flags["plan_themeColor"] = FlagEntry(value: "#12345G") }
        killing.base.version = "killed"
        f.server.document = killing
        #expect(await eventually { f.provider.isKillSwitchActive })
        f.provider.shutdown()
        let events = f.provider.recentEvents
        #expect(events.contains { $0.kind == .changeNotified }, "the kill did not come by the stream")
        if rejectedBySchema { #expect(events.contains { $0.kind == .payloadRejected }) }
        Self.expectAnnounced(events: events, changes: await Self.collect(changes), keys: served)
    }

    @Test func aHoldStoredByAnEarlierLaunchIsAnnouncedAtStart() async throws {
        let dir = TempDir()
        try seedFallback(dir, auraLinkPersonal)
        try LastKnownGoodStore(fileURL: dir.url("flags.lkg")).setKillHold(KillHold(since: Date(), context: "earlier"))
        let f = try ProviderFixture(reachable: false, dir: dir)
        defer { f.stop() }
        #expect(f.provider.isKillSwitchActive)
        let kills = f.provider.recentEvents.filter { $0.kind == .killSwitch }
        #expect(kills.count == 1 && kills.first?.killSwitchActive == true)
        // An extension reading the same file hears it the same way.
        let offline = FallbackClient(fileURL: f.fallbackURL, context: auraPersonal)
        #expect(offline.isKillSwitchActive)
        #expect(offline.recentEvents.filter { $0.kind == .killSwitch }.count == 1)
    }

    @Test func anotherContextsAnswerIsAnnouncedToAClientServingThisOne() async throws {
        // The app serves AuraLink Personal; an offline client beside it (a widget in the app's
        // process) serves AuraLink Business from the same store. The service kills the app's
        // context: the hold covers every context.
        let dir = TempDir()
        try seedFallback(dir, auraLinkPersonal)
        var business = auraLinkPersonal
        business["plan_displayName"] = "AuraLink Business"
        try seedFallback(dir, business, for: auraBusiness)
        let f = try ProviderFixture(document: ServerDocument.seedDefaults(["kill_switch": true]), dir: dir)
        defer { f.stop() }
        let extensionClient = FallbackClient(store: f.store, context: auraBusiness)
        let changes = extensionClient.changes()
        #expect(!extensionClient.isKillSwitchActive)
        _ = await f.provider.refresh()
        #expect(f.provider.isKillSwitchActive)
        extensionClient.identify(auraBusiness)   // picks up what the app stored
        #expect(extensionClient.isKillSwitchActive)
        extensionClient.shutdown()
        Self.expectAnnounced(events: extensionClient.recentEvents, changes: await Self.collect(changes), keys: business.keys)
        // The app, switching to the other context, stays killed: nothing new to announce.
        let before = f.provider.recentEvents.filter { $0.kind == .killSwitch }.count
        f.provider.identify(auraBusiness)
        #expect(f.provider.isKillSwitchActive)
        #expect(f.provider.recentEvents.filter { $0.kind == .killSwitch }.count == before)
    }

    @Test(arguments: [false, true])
    func aKillAndTheSnapshotThatCarriedItAreOneWriteOfTheFile(rejectedBySchema: Bool) async throws {
        let dir = TempDir()
        try seedFallback(dir, auraLinkPersonal)
        var killing: [String: FlagValue] = ["kill_switch": true]
        if rejectedBySchema { killing["plan_themeColor"] = "#12345G" }
        let f = try ProviderFixture(
            document: ServerDocument.seedDefaults(killing), dir: dir, configuration: rejectedBySchema ? Self.schema : .init())
        defer { f.stop() }
        _ = await f.provider.refresh()
        #expect(f.provider.isKillSwitchActive)
        #expect(f.store.fileWriteCount == 1, "the hold and the snapshot were written apart")
        let relaunched = LastKnownGoodStore(fileURL: f.fallbackURL)
        #expect(relaunched.killHold != nil)
        // An accepted answer is stored as it came; a rejected one is not stored at all — the
        // hold alone keeps the kill, over the values stored before it.
        let stored = relaunched.lastKnownGood(for: auraPersonal)?.snapshot.flags
        #expect(stored?["kill_switch"]?.value == (rejectedBySchema ? false : true))
        if rejectedBySchema { #expect(stored?["plan_themeColor"]?.value == auraLinkPersonal["plan_themeColor"]) }
        // Lifted by the next answer: one write again.
        f.server.document = ServerDocument.seedDefaults(["kill_switch": false])
        _ = await f.provider.refresh()
        #expect(!f.provider.isKillSwitchActive)
        #expect(f.store.fileWriteCount == 2)
        #expect(LastKnownGoodStore(fileURL: f.fallbackURL).killHold == nil)
    }
}
