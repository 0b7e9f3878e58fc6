import Foundation
import Testing
import TestSupport
@testable import FeatureFlags

/// A snapshot's flags in their two forms — the public dictionary and the read table a stored
/// snapshot decodes into — describe the same flags whichever form came first.
@Suite("Flag sets: the dictionary and the read table")
struct FlagSetTests {
    static let entries: [String: FlagEntry] = [
        "on": FlagEntry(value: .bool(true)),
        "theme": FlagEntry(value: .string("dark"), variant: "night", reason: .targetingMatch, metadata: ["team": .string("ui")]),
        "broken": FlagEntry(value: nil, errorCode: .parseError),
        "list": FlagEntry(value: .list([.string("a"), .int(2)])),
    ]

    /// `entries` stored and loaded: decoded straight into a table.
    static func decoded(_ entries: [String: FlagEntry], version: String? = "v1") throws -> FlagSnapshot {
        let snapshot = FlagSnapshot(flags: entries, version: version, fetchedAt: Date(timeIntervalSince1970: 1_750_000_000))
        let bytes = SnapshotCodec.encode(StoredFlags(snapshot: snapshot, etag: nil))
        return try bytes.withUnsafeBytes { raw in try SnapshotCodec.decode(raw) }.snapshot
    }

    @Test func aDecodedSnapshotGivesBackEveryEntryAsADictionary() throws {
        let loaded = try Self.decoded(Self.entries)
        #expect(loaded.flags == Self.entries)
        for (name, entry) in Self.entries { #expect(loaded[name] == entry) }
        #expect(loaded["missing"] == nil)
        #expect(loaded.storage.table.count == 4)
    }

    @Test func snapshotsCompareEqualWhateverFormEachHolds() throws {
        let fetched = FlagSnapshot(flags: Self.entries, version: "v1", fetchedAt: Date(timeIntervalSince1970: 1_750_000_000))
        let loaded = try Self.decoded(Self.entries)
        #expect(loaded == fetched)
        #expect(fetched == loaded)
        var changed = Self.entries
        changed["theme"] = FlagEntry(value: .string("dark"), variant: "day", reason: .targetingMatch, metadata: ["team": .string("ui")])
        #expect(try Self.decoded(changed) != fetched)
        changed = Self.entries
        changed["extra"] = FlagEntry(value: .int(1))
        #expect(try Self.decoded(changed) != loaded)
        changed = Self.entries
        changed["on"] = nil
        #expect(try Self.decoded(changed) != loaded)
    }

    @Test func storingTheSameFlagsLoadedFromDiskIsTheSameContent() throws {
        let loaded = StoredFlags(snapshot: try Self.decoded(Self.entries), etag: EntityTag("\"a\"", endpoint: "e"))
        let fetched = StoredFlags(
            snapshot: FlagSnapshot(flags: Self.entries, version: "v1", fetchedAt: Date()), etag: EntityTag("\"a\"", endpoint: "e"))
        #expect(loaded.sameContent(as: fetched))
        var other = Self.entries
        other["on"] = FlagEntry(value: .bool(false))
        #expect(!loaded.sameContent(as: StoredFlags(snapshot: FlagSnapshot(flags: other, version: "v1"), etag: EntityTag("\"a\"", endpoint: "e"))))
        // The same values signed again (a later signing time and expiry), or read with missing
        // flags off: new content, to be written.
        var signed = fetched.snapshot
        signed.signature = SignatureStamp(keyID: "ops", issuedAt: Date(timeIntervalSince1970: 1), expiresAt: Date(timeIntervalSince1970: 2))
        #expect(!loaded.sameContent(as: StoredFlags(snapshot: signed, etag: fetched.etag)))
        var resigned = signed
        resigned.signature = SignatureStamp(keyID: "ops", issuedAt: Date(timeIntervalSince1970: 3), expiresAt: Date(timeIntervalSince1970: 4))
        #expect(!StoredFlags(snapshot: signed, etag: nil).sameContent(as: StoredFlags(snapshot: resigned, etag: nil)))
        var off = fetched.snapshot
        off.missingFlagsAreOff = true
        #expect(!loaded.sameContent(as: StoredFlags(snapshot: off, etag: fetched.etag)))
    }

    @Test func aDocumentSignedAgainWithTheSameValuesReplacesTheStoredStamp() throws {
        let dir = TempDir()
        let store = LastKnownGoodStore(fileURL: dir.url("flags.lkg"))
        let context = EvaluationContext(targetingKey: "u")
        var first = FlagSnapshot(flags: Self.entries, version: "v1", fetchedAt: Date(timeIntervalSince1970: 1_790_000_000))
        first.signature = SignatureStamp(
            keyID: "ops", issuedAt: Date(timeIntervalSince1970: 1_790_000_000), expiresAt: Date(timeIntervalSince1970: 1_790_086_400))
        try store.save(first, etag: nil, for: context)
        // Signed again a week later, the values unchanged, served without a tag.
        var again = first
        again.signature = SignatureStamp(
            keyID: "ops", issuedAt: Date(timeIntervalSince1970: 1_790_604_800), expiresAt: Date(timeIntervalSince1970: 1_790_691_200))
        try store.save(again, etag: nil, for: context)
        #expect(store.lastKnownGood(for: context)?.snapshot.signature == again.signature)
        #expect(LastKnownGoodStore(fileURL: dir.url("flags.lkg")).lastKnownGood(for: context)?.snapshot.signature == again.signature,
                "written to the file: a relaunch reads the new expiry")
    }

    @Test func theKillSwitchIsFoundInEitherForm() throws {
        var entries = Self.entries
        entries["kill_switch"] = FlagEntry(value: .bool(true))
        #expect(FlagSnapshot(flags: entries).isKillSwitchOn(key: "kill_switch"))
        #expect(try Self.decoded(entries).isKillSwitchOn(key: "kill_switch"))
        #expect(try !(Self.decoded(Self.entries).isKillSwitchOn(key: "kill_switch")))
    }

    @Test func aNameStoredTwiceKeepsTheLaterEntry() throws {
        // A damaged or hand-made file may name a flag twice: the later entry wins, as it would
        // in a dictionary filled in file order, and the table counts the name once.
        var w = ByteWriter(capacity: 64)
        w.u8(1)
        w.u8(0)
        w.u64((1_750_000_000.0).bitPattern)
        w.varint(2)
        for value in [1, 2] {
            w.string("twice")
            w.u8(1)
            SnapshotCodec.encodeValue(.int(value), into: &w)
        }
        let stored = try w.bytes.withUnsafeBytes { raw in try SnapshotCodec.decode(raw) }
        #expect(stored.snapshot.flags == ["twice": FlagEntry(value: .int(2))])
        #expect(stored.snapshot.storage.table.count == 1)
    }

    @Test func aTruncatedFileThrowsAndKeepsNothing() throws {
        let bytes = SnapshotCodec.encode(StoredFlags(snapshot: FlagSnapshot(flags: Self.entries), etag: nil))
        for cut in [bytes.count - 1, bytes.count / 2, 30] {
            #expect(throws: ByteDecodingError.self) { try Array(bytes.prefix(cut)).withUnsafeBytes { raw in try SnapshotCodec.decode(raw) } }
        }
    }

    @Test func bundledDefaultsBeneathADecodedSnapshotAreServedWhereItHasNone() throws {
        let base = ServingBase(defaults: ["on": FlagEntry(value: .bool(false)), "fallback_only": FlagEntry(value: .int(7))], killSwitchKey: "kill_switch")
        let prepared = base.prepare(try Self.decoded(Self.entries))
        #expect(prepared.table.value("on", hash: FlagNameHash.of("on")) == .bool(true))
        #expect(prepared.table.value("fallback_only", hash: FlagNameHash.of("fallback_only")) == .int(7))
        #expect(prepared.table.count == 5)
        // Without defaults the snapshot's own table is served: nothing is built twice.
        let plain = ServingBase(killSwitchKey: "kill_switch").prepare(try Self.decoded(Self.entries))
        #expect(plain.table === plain.snapshot.storage.table)
    }

    @Test func detailsShareTheTablesVariantAndMetadata() throws {
        let prepared = ServingBase(killSwitchKey: "kill_switch").prepare(try Self.decoded(Self.entries))
        let served = ServedState(prepared, source: .fallback, status: .ready)
        let details = ServedView(served).details(FlagKey("theme", default: "light"), base: ServingBase(killSwitchKey: "kill_switch"), now: Date())
        #expect(details.variant == "night")
        #expect(details.metadata == ["team": .string("ui")])
        let copy = FlagDetails(
            key: "theme", value: "dark", variant: "night", reason: details.reason, source: details.source,
            snapshotVersion: details.snapshotVersion, age: details.age, metadata: ["team": .string("ui")])
        #expect(copy == details)
        #expect(FlagDetails(key: "theme", value: "dark", reason: details.reason, source: details.source) != details)
    }

    @Test func theDefaultWallClockIsWithinAFewMillisecondsOfDate() {
        let before = Date()
        let coarse = coarseWallClockNow()
        let after = Date()
        #expect(coarse.timeIntervalSince(before) > -0.05)
        #expect(coarse.timeIntervalSince(after) < 0.05)
    }
}
