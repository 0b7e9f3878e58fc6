import FeatureFlagsServices
import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FlagServer
import FeatureFlagsTesting

/// A service that leaves disabled flags out of its answers (Unleash's frontend API): a flag
/// the answer lacks is off — `false` for a Bool read whatever the key's default — online,
/// after an offline relaunch, under bundled defaults, in the crash-loop journal and in merged
/// contexts.
@Suite("Missing flags are off")
struct MissingFlagsOffTests {
    /// A provider reading Unleash's frontend API from `server`, its fallback file in `dir`.
    private func unleashProvider(
        _ server: FlagServer, _ dir: TempDir, reachable: Bool = true, defaults: BundledDefaults = .none
    ) -> FeatureFlagProvider {
        let fetcher = FlagFetcher(endpoint: .unleash(baseURL: server.baseURL, clientKey: "k"), configuration: .loopback)
        var configuration = FeatureFlagProvider.Configuration()
        configuration.changeStreams = false
        configuration.bundledDefaults = defaults
        return FeatureFlagProvider(
            context: auraPersonal, fetcher: fetcher, store: LastKnownGoodStore(fileURL: dir.url("flags.lkg")),
            configuration: configuration, reachability: ManualReachability(reachable), lifecycle: AlwaysForeground(),
            clock: TestClock(), random: SplitMix(seed: 1))
    }

    @Test func aToggleTurnedOffOnTheServerReadsOffWhateverTheKeysDefault() async throws {
        let server = try FlagServer(document: .seedDefaults(["new_checkout": true, "banner": "spring"]))
        let dir = TempDir()
        let provider = unleashProvider(server, dir)
        defer { provider.shutdown(); server.stop() }
        let on = FlagKey("new_checkout", default: true)
        let off = FlagKey("new_checkout", default: false)

        #expect(await provider.refresh().isUpdate)
        #expect(provider.value(off) == true)
        #expect(provider.snapshot.missingFlagsAreOff)

        server.document = .seedDefaults(["new_checkout": false, "banner": "spring"])
        #expect(await provider.refresh().isUpdate)
        #expect(provider.snapshot.flags["new_checkout"] == nil, "the frontend API leaves the disabled toggle out")
        #expect(provider.value(on) == false, "off on the server: off in the app, though the code's default is on")
        let details = provider.details(on)
        #expect(details.value == false && details.reason == .disabled && details.errorCode == nil)
        #expect(details.source == .network)
        // A toggle the service never had reads off too: the frontend API cannot tell them apart.
        #expect(provider.value(FlagKey("never_created", default: true)) == false)
        // Keys of other types keep their default (a disabled toggle's payload is no value).
        #expect(provider.value(FlagKey("new_checkout.payload", default: "fallback")) == "fallback")
        let text = provider.details(FlagKey("new_checkout.payload", default: "fallback"))
        #expect(text.reason == .disabled && text.errorCode == nil && text.source == .codeDefault)
        #expect(provider.value(FlagKey("banner.payload", default: "-")) == "spring", "enabled toggles keep their payload")
        // Through the protocol, as modules read it.
        let client: any FeatureFlagClient = provider
        #expect(client.value(on) == false)
        #expect(client.flagValue("new_checkout") == .bool(false))
    }

    @Test func anOfflineRelaunchKeepsTheToggleOffOverBundledDefaults() async throws {
        let server = try FlagServer(document: .seedDefaults(["new_checkout": false, "banner": "spring"]))
        let dir = TempDir()
        let online = unleashProvider(server, dir)
        #expect(await online.refresh().isUpdate)
        online.shutdown()
        server.stop()

        let defaults = BundledDefaults.values(["new_checkout": true, "legacy_limit": 7])
        let relaunched = unleashProvider(server, dir, reachable: false, defaults: defaults)
        defer { relaunched.shutdown() }
        #expect(relaunched.snapshot.missingFlagsAreOff, "kept in the fallback file")
        #expect(relaunched.value(FlagKey("new_checkout", default: true)) == false, "a bundled true does not turn it back on")
        #expect(relaunched.details(FlagKey("new_checkout", default: true)).source == .fallback)
        #expect(relaunched.value(FlagKey("legacy_limit", default: 0)) == 7, "bundled values that are not Bool still fill in")
    }

    @Test func aServiceThatSendsEveryFlagStillReadsMissingFlagsAsTheirDefault() async throws {
        let server = try FlagServer(document: .seedDefaults(["new_checkout": false]))
        let fetcher = FlagFetcher(endpoint: .json(post: server.flagsURL), configuration: .loopback)
        defer { server.stop(); fetcher.shutdown() }
        let snapshot = try #require(snapshot(of: await fetcher.fetch(auraPersonal)))
        #expect(!snapshot.missingFlagsAreOff)
        let dir = TempDir()
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        try store.save(snapshot, etag: nil, for: auraPersonal)
        let client = FallbackClient(store: store, context: auraPersonal)
        let details = client.details(FlagKey("never_created", default: true))
        #expect(details.value == true && details.errorCode == .flagNotFound)
    }

    @Test func theFallbackFileAndTheJournalKeepIt() throws {
        var snapshot = FlagSnapshot(values: ["a": true], version: "7", fetchedAt: Date(timeIntervalSince1970: 1_750_000_000))
        let plain = SnapshotCodec.encode(StoredFlags(snapshot: snapshot, etag: nil))
        snapshot.missingFlagsAreOff = true
        let marked = SnapshotCodec.encode(StoredFlags(snapshot: snapshot, etag: nil))
        #expect(plain.count == marked.count && plain[1] | 128 == marked[1], "one presence bit, no bytes")
        let read = try marked.withUnsafeBytes { buffer in try SnapshotCodec.decode(buffer) }
        #expect(read.snapshot == snapshot && read.snapshot.missingFlagsAreOff)
        let readPlain = try plain.withUnsafeBytes { buffer in try SnapshotCodec.decode(buffer) }
        #expect(!readPlain.snapshot.missingFlagsAreOff, "files written before read as before")

        var journal = LaunchJournal()
        journal.keepHealthy(snapshot, for: "ctx")
        let back = try #require(LaunchJournal(journal.flagValue))
        #expect(back.healthy["ctx"]?.missingFlagsAreOff == true)
    }

    @Test func aMergedContextTakesAMembersMissingToggleAsOff() {
        let at = Date(timeIntervalSince1970: 1_750_000_000)
        var venue = FlagSnapshot(values: ["banner": "venue"], fetchedAt: at)
        venue.missingFlagsAreOff = true
        var user = FlagSnapshot(values: ["new_checkout": true, "banner": "user"], fetchedAt: at)
        user.missingFlagsAreOff = true
        let members = [(context: EvaluationContext(targetingKey: "venue-1"), snapshot: venue), (context: auraPersonal, snapshot: user)]
        let identity = ContextMerge.identity(of: members.map(\.context))

        let top = ContextMerge().merge(members, killSwitchKey: "kill_switch", identity: identity)
        #expect(top.flags["new_checkout"]?.value == .bool(false), "the top-ranked member turned it off")
        #expect(top.flags["banner"]?.value == .string("venue"))
        #expect(top.missingFlagsAreOff)

        let any = ContextMerge(policies: ["new_checkout": .any]).merge(members, killSwitchKey: "kill_switch", identity: identity)
        #expect(any.flags["new_checkout"]?.value == .bool(true))

        // A member whose service sends every flag: its missing flags are not off.
        let unmarked = FlagSnapshot(values: ["banner": "venue"], fetchedAt: at)
        let mixed = ContextMerge().merge(
            [(context: EvaluationContext(targetingKey: "venue-1"), snapshot: unmarked), (context: auraPersonal, snapshot: user)],
            killSwitchKey: "kill_switch", identity: identity)
        #expect(mixed.flags["new_checkout"]?.value == .bool(true))
        #expect(!mixed.missingFlagsAreOff)
    }
}

extension FetchOutcome {
    /// Whether the fetch brought new values.
    fileprivate var isUpdate: Bool {
        if case .updated = self { return true }
        return false
    }
}

extension MissingFlagsOffTests {
    /// Values whose only difference is how a missing flag reads (one context's answer came from
    /// Unleash, the other's from a service that sends every flag): a key absent from both
    /// reads `false`, then its code default — a change subscribers must hear of.
    @Test func aChangeOfHowMissingFlagsReadIsPublished() async throws {
        let dir = TempDir()
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        let unleashUser = EvaluationContext(targetingKey: "u-unleash")
        let jsonUser = EvaluationContext(targetingKey: "u-json")
        var fromUnleash = FlagSnapshot(values: ["banner": true], version: "1", contextFingerprint: unleashUser.fingerprint)
        fromUnleash.missingFlagsAreOff = true
        try store.save(fromUnleash, etag: nil, for: unleashUser)
        try store.save(FlagSnapshot(values: ["banner": true], version: "1", contextFingerprint: jsonUser.fingerprint), etag: nil, for: jsonUser)
        let client = FallbackClient(store: store, context: unleashUser)
        defer { client.shutdown() }
        let unlisted = FlagKey("new_checkout", default: true)
        #expect(client.value(unlisted) == false)
        var changes = client.changes().makeAsyncIterator()
        client.identify(jsonUser)
        #expect(client.value(unlisted) == true)
        client.shutdown()
        let change = await changes.next()
        #expect(change?.snapshot.missingFlagsAreOff == false, "subscribers are told the served values changed")
    }
}
