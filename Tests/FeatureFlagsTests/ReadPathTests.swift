import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting

/// The lock-free read path: publications read through each thread's cache, the flag table,
/// and keys that carry their name's hash.
@Suite("Read path")
struct ReadPathTests {
    private final class Box: Sendable {
        let value: Int
        init(_ value: Int) { self.value = value }
    }

    /// A client state serving `a`, `b` = `n` under version `vn`.
    private static func prepared(_ n: Int, base: ServingBase) -> PreparedSnapshot {
        base.prepare(FlagSnapshot(values: ["a": .int(n), "b": .int(n)], version: "v\(n)", fetchedAt: Date(timeIntervalSince1970: 0)))
    }

    /// Runs `body` on `count` threads at once and waits for all of them (bounded: each body ends
    /// by itself).
    private static func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        let group = DispatchGroup()
        for index in 0..<count {
            group.enter()
            Thread {
                body(index)
                group.leave()
            }.start()
        }
        group.wait()
    }

    @Test func noReadEverReturnsAValueFromASnapshotThatWasNeverServed() async throws {
        // Off the global executor's threads: loopback tests beside it need them.
        try await blocking {
            let base = ServingBase(killSwitchKey: "kill_switch")
            let serving = FlagServing(Self.prepared(0, base: base), source: .network, status: .ready, base: base, name: "test", now: { Date() })
            let a = FlagKey("a", default: -1)
            let b = FlagKey("b", default: -1)
            let activations = 3_000
            let done = Locked(false)
            let problems = Locked<[String]>([])
            let reads = Locked(0)
            Self.onThreads(4) { index in
                if index == 0 {
                    // The writer: activations 1...N, each a whole snapshot.
                    for n in 1...activations {
                        serving.serve(Self.prepared(n, base: base), source: .network, reasonOverride: nil)
                    }
                    done.withLock { $0 = true }
                    return
                }
                var last = 0
                var count = 0
                var finished = false
                while !finished {
                    finished = done.withLock { $0 }
                    let value = serving.lookup(a.name, hash: a.nameHash).flatMap { Int(flagValue: $0) } ?? -1
                    let details = serving.details(b)
                    let raw = serving.flagDetails(a.name, nameHash: a.nameHash)
                    count += 3
                    var found: [String] = []
                    if !(0...activations).contains(value) { found.append("a read \(value), never served") }
                    if value < last { found.append("a went back from \(last) to \(value)") }
                    if details.snapshotVersion != "v\(details.value)" {
                        found.append("details mixed value \(details.value) with version \(details.snapshotVersion ?? "nil")")
                    }
                    if case .int(let n)? = raw.value, raw.snapshotVersion != "v\(n)" {
                        found.append("untyped details mixed value \(n) with version \(raw.snapshotVersion ?? "nil")")
                    }
                    if details.value < value { found.append("details of b (\(details.value)) older than a read before it (\(value))") }
                    last = max(value, details.value)
                    if !found.isEmpty {
                        problems.withLock { $0 += found }
                        return
                    }
                }
                reads.withLock { $0 += count }
                // After the last activation, every thread sees it.
                let final = serving.lookup(a.name, hash: a.nameHash)
                if final != .int(activations) { problems.withLock { $0.append("after the writer ended: \(String(describing: final))") } }
            }
            #expect(problems.withLock { $0 }.isEmpty, "\(problems.withLock { $0.prefix(5) })")
            #expect(reads.withLock { $0 } > 0)
        }
    }

    @Test func aPublishIsSeenByTheNextReadOnAThreadThatCachedTheOldObject() {
        let publication = ReadPublication(Box(1))
        let cached = DispatchSemaphore(value: 0)
        let published = DispatchSemaphore(value: 0)
        let seen = Locked<[Int]>([])
        let group = DispatchGroup()
        group.enter()
        Thread {
            seen.withLock { $0.append(publication.read { $0.value }) }
            cached.signal()
            published.wait()
            seen.withLock { $0.append(publication.read { $0.value }) }
            group.leave()
        }.start()
        cached.wait()
        publication.publish(Box(2))
        published.signal()
        group.wait()
        #expect(seen.withLock { $0 } == [1, 2])
        #expect(publication.object.value == 2)
    }

    @Test func anAddressReusedByANewObjectIsNeverMistakenForTheCachedOne() {
        // Each object is released as soon as the next replaces it: the allocator hands its
        // address to a later object, often the very next. The thread's slot keeps the object it
        // read alive, so the word can only hold that address while that object is published.
        let publication = ReadPublication(Box(0))
        var addresses = Set<UnsafeMutableRawPointer>()
        for n in 1...10_000 {
            let box = Box(n)
            addresses.insert(Unmanaged.passUnretained(box).toOpaque())
            publication.publish(box)
            let read = publication.read { $0.value }
            if read != n {
                Issue.record("published \(n), read \(read)")
                break
            }
        }
        // The test means something only if addresses were in fact reused.
        #expect(addresses.count < 10_000, "no address was reused")
    }

    @Test func aPublicationIsPristineWhileItsInitialObjectIsPublished() {
        let initial = Box(1)
        let publication = ReadPublication(initial)
        #expect(publication.isPristine)
        publication.publish(Box(2))
        #expect(!publication.isPristine)
        publication.publish(initial)
        #expect(publication.isPristine, "the initial object published again")
    }

    @Test func publicationsSharingCacheSlotsEachReadTheirOwnObject() {
        // More publications than a thread has slots: some share a slot and evict each other.
        let publications = (0..<(ThreadReadCache.slotCount * 3)).map { ReadPublication(Box($0)) }
        for round in 0..<4 {
            for (index, publication) in publications.enumerated() {
                #expect(publication.read { $0.value } == index + round * 1_000)
            }
            for (index, publication) in publications.enumerated() { publication.publish(Box(index + (round + 1) * 1_000)) }
        }
        Self.onThreads(3) { _ in
            for (index, publication) in publications.enumerated().reversed() {
                #expect(publication.read { $0.value } == index + 4_000)
            }
        }
    }

    @Test func aPublicationGoneFreesTheObjectItsThreadCached() {
        weak var observed: Box?
        do {
            let box = Box(7)
            observed = box
            let publication = ReadPublication(box)
            #expect(publication.read { $0.value } == 7)
        }
        #expect(observed == nil, "the reading thread's cached copy went with the publication")
    }

    @Test func anObjectReplacedOnAnotherThreadIsFreedWhenThatThreadReadsAgain() {
        weak var first: Box?
        let publication: ReadPublication<Box> = {
            let box = Box(1)
            first = box
            return ReadPublication(box)
        }()
        let reread = DispatchSemaphore(value: 0)
        let group = DispatchGroup()
        group.enter()
        Thread {
            _ = publication.read { $0.value }
            reread.wait()
            _ = publication.read { $0.value }
            group.leave()
        }.start()
        publication.publish(Box(2))
        // The other thread still holds the first object until it reads again.
        reread.signal()
        group.wait()
        #expect(first == nil)
    }

    @Test func theTableFindsEveryNameAndOnlyThose() {
        var flags: [String: FlagEntry] = [:]
        for i in 0..<2_000 { flags["flag_\(i)"] = FlagEntry(value: .int(i)) }
        flags[""] = FlagEntry(value: .string("empty name"))
        flags["ünïcødé ✓"] = FlagEntry(value: .bool(true))
        flags[String(repeating: "long", count: 100)] = FlagEntry(value: .double(1.5))
        let table = FlagTable(snapshot: flags, defaults: [:])
        #expect(table.count == flags.count)
        for (name, entry) in flags {
            #expect(table.value(name, hash: FlagNameHash.of(name)) == entry.value, "\(name)")
        }
        for i in 0..<500 {
            let name = "absent_\(i)"
            #expect(table.value(name, hash: FlagNameHash.of(name)) == nil)
        }
        // A hash that matches but a name that does not: no match.
        #expect(table.value("flag_1", hash: FlagNameHash.of("flag_2")) == nil || FlagNameHash.of("flag_1") == FlagNameHash.of("flag_2"))
        #expect(FlagTable.empty.value("x", hash: FlagNameHash.of("x")) == nil)
    }

    @Test func snapshotEntriesHideBundledDefaultsEvenWithoutAValue() {
        let table = FlagTable(
            snapshot: ["both": FlagEntry(value: .int(2)), "valueless": FlagEntry(value: nil, errorCode: .general)],
            defaults: ["both": FlagEntry(value: .int(1)), "valueless": FlagEntry(value: .int(1)), "default_only": FlagEntry(value: .int(3))])
        func slot(_ name: String) -> FlagTable.Slot? { table.slot(name, hash: FlagNameHash.of(name))?.pointee }
        #expect(table.count == 3)
        #expect(slot("both")?.value == .int(2) && slot("both")?.fromSnapshot == true && slot("both")?.extras == nil)
        #expect(slot("valueless")?.value == nil && slot("valueless")?.fromSnapshot == true)
        #expect(slot("valueless")?.errorCode == .general, "an entry's extras are kept")
        #expect(slot("default_only")?.value == .int(3) && slot("default_only")?.fromSnapshot == false)
    }

    @Test func keysKeepTheirConversionsWhereverTheyAreCopied() {
        let client = InMemoryFlagClient(["level": .string("high"), "count": .int(3), "on": .bool(true)])
        enum Level: String { case low, high }
        // Keys built in a loop and kept only in an array: custom closures outlive their scope.
        let keys: [FlagKey<Int>] = (0..<3).map { offset in
            FlagKey("count", default: -1, convert: { Int(flagValue: $0).map { $0 + offset } }, encode: { .int($0 - offset) })
        }
        #expect(keys.map { client.value($0) } == [3, 4, 5])
        #expect(keys.map { client.details($0).value } == [3, 4, 5])
        // Keys of different types under one name share nothing: each converts as its type does.
        let asInt = FlagKey("on", default: 0)
        let asBool = FlagKey("on", default: false)
        #expect(client.value(asInt) == 0 && client.details(asInt).errorCode == .typeMismatch)
        #expect(client.value(asBool))
        #expect(client.value(FlagKey("level", default: Level.low)) == .high)
        // A key read through the untyped path hashes the name itself: the same answer.
        #expect(client.flagValue("count") == client.flagValue("count", nameHash: FlagKey("count", default: 0).nameHash))
    }

    @Test func detailsOfEveryCommonTypeMatchTheGeneralPath() {
        let client: any FeatureFlagClient = InMemoryFlagClient(
            ["b": .bool(true), "s": .string("x"), "i": .int(2), "d": .double(2.5), "v": .list([.int(1)])], version: "v1")
        func same<Value: Equatable>(_ key: FlagKey<Value>) {
            let direct = client.details(key)
            let general = client.flagDetails(key.name).typed(for: key)
            #expect(direct.value == general.value && direct.reason == general.reason && direct.source == general.source)
            #expect(direct.snapshotVersion == general.snapshotVersion && direct.errorCode == general.errorCode)
        }
        same(FlagKey("b", default: false))
        same(FlagKey("s", default: ""))
        same(FlagKey("i", default: 0))
        same(FlagKey("d", default: 0.0))
        same(FlagKey("v", default: FlagValue.null))
        same(FlagKey("b", default: 0))  // a mismatch
        same(FlagKey("missing", default: "none"))
    }
}
