import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting

@Suite("Broadcaster and LatestValueStream")
struct BroadcasterTests {
    @Test func aValueYieldedBeforeAnySubscriberIsReplayedOnceAndLaterValuesArriveInOrder() async {
        let broadcaster = Broadcaster<Int>(replay: 2)
        broadcaster.yield(1)
        broadcaster.yield(2)
        broadcaster.yield(3)
        var first = broadcaster.subscribe().makeAsyncIterator()
        broadcaster.yield(4)
        var second = broadcaster.subscribe().makeAsyncIterator()
        broadcaster.yield(5)
        broadcaster.finish()
        var seenFirst: [Int] = []
        while let value = await first.next() { seenFirst.append(value) }
        var seenSecond: [Int] = []
        while let value = await second.next() { seenSecond.append(value) }
        #expect(seenFirst == [2, 3, 4, 5])
        #expect(seenSecond == [3, 4, 5])
    }

    @Test func aValueNotRememberedReachesOnlyCurrentSubscribers() async {
        let broadcaster = Broadcaster<Int>(replay: 4)
        var early = broadcaster.subscribe().makeAsyncIterator()
        broadcaster.yield(1, remember: false)
        var late = broadcaster.subscribe().makeAsyncIterator()
        broadcaster.yield(2)
        broadcaster.finish()
        #expect(await early.next() == 1)
        #expect(await early.next() == 2)
        #expect(await early.next() == nil)
        #expect(await late.next() == 2)
        #expect(await late.next() == nil)
    }

    @Test func aSubscriberThatFellBehindIsToldHowManyItMissedWhereItMissedThem() async {
        // Values are negative, notices positive: a notice says how many values were lost.
        let broadcaster = Broadcaster<Int>(bufferSize: 4, fold: Self.count)
        var behind = broadcaster.subscribe().makeAsyncIterator()
        #expect(await Self.read(2, from: broadcaster, into: &behind) == [-1, -2])
        for n in 3...10 { broadcaster.yield(-n) }   // nobody reads: 3 to 6 are lost
        broadcaster.yield(-11, remember: false)      // and 7
        broadcaster.finish()
        var rest: [Int] = []
        while let value = await behind.next() { rest.append(value) }
        #expect(rest == [5, -8, -9, -10, -11], "the notice where the values went missing, then the newest four")
    }

    /// Counts the values lost: the notice a test's subscriber reads (positive; values are negative).
    static let count: @Sendable (Int?, Int) -> Int = { told, _ in (told ?? 0) + 1 }

    /// Yields `-1…-count` and reads each at once.
    static func read(_ count: Int, from broadcaster: Broadcaster<Int>, into iterator: inout AsyncStream<Int>.Iterator) async -> [Int] {
        var seen: [Int] = []
        for n in 1...count {
            broadcaster.yield(-n)
            seen.append(await iterator.next() ?? 0)
        }
        return seen
    }

    @Test func withoutAFoldValuesAreLostWithoutAWord() async {
        let broadcaster = Broadcaster<Int>(bufferSize: 2)
        var behind = broadcaster.subscribe().makeAsyncIterator()
        for n in 1...5 { broadcaster.yield(n) }
        #expect(await behind.next() == 4)
        #expect(await behind.next() == 5)
        broadcaster.yield(6)
        broadcaster.finish()
        #expect(await behind.next() == 6)
        #expect(await behind.next() == nil)
    }

    @Test func aNoticeGoesOnlyToTheSubscriberThatMissedValuesAndOnlyOnce() async {
        let broadcaster = Broadcaster<Int>(bufferSize: 2, fold: Self.count)
        var slow = broadcaster.subscribe().makeAsyncIterator()
        broadcaster.yield(-1)
        var fast = broadcaster.subscribe().makeAsyncIterator()
        broadcaster.yield(-2)
        broadcaster.yield(-3)   // the slow one loses -1; the fast one holds -2, -3
        #expect(await fast.next() == -2)
        #expect(await fast.next() == -3)
        #expect(await slow.next() == 1)
        #expect(await slow.next() == -2)
        #expect(await slow.next() == -3)
        broadcaster.yield(-4)
        broadcaster.finish()
        #expect(await slow.next() == -4)
        #expect(await slow.next() == nil)
        #expect(await fast.next() == -4)
        #expect(await fast.next() == nil)
    }

    @Test func aReaderThatStopsReadingLeavesTheBroadcaster() async {
        let broadcaster = Broadcaster<Int>(fold: Self.count)
        let reader = Task {
            var count = 0
            for await _ in broadcaster.subscribe() { count += 1 }
            return count
        }
        #expect(await eventually { broadcaster.subscriberCount == 1 })
        broadcaster.yield(-1)
        reader.cancel()
        _ = await reader.value
        #expect(await eventually { broadcaster.subscriberCount == 0 })
    }

    @Test func aChangesReaderThatFellBehindReadsTheKeysOfTheChangesItLost() async {
        let client = InMemoryFlagClient()
        let changes = client.changes()
        // Nobody reads while 200 flags change one at a time: the stream keeps the newest 128.
        for n in 0..<200 { client.set("flag_\(n)", .int(n)) }
        client.shutdown()
        var read: [Set<String>] = []
        for await change in changes { read.append(change.keys) }
        #expect(read.count == 129, "one change in place of the 72 lost, then the 128 kept")
        #expect(read.first == Set((0..<72).map { "flag_\($0)" }))
        #expect(read.dropFirst().map { $0.first ?? "" } == (72..<200).map { "flag_\($0)" })
        #expect(read.reduce(into: Set<String>()) { $0.formUnion($1) }.count == 200, "no key lost")
    }

    @Test func aBroadcasterLetGoEndsItsStreams() async {
        var broadcaster: Broadcaster<Int>? = Broadcaster<Int>()
        var updates = broadcaster!.subscribe().makeAsyncIterator()
        broadcaster?.yield(7)
        broadcaster = nil
        #expect(await updates.next() == 7)
        #expect(await updates.next() == nil)
    }

    @Test func aLatestValueStreamStartsEachSubscriberWithTheLatestValue() async {
        let stream = LatestValueStream<Bool>()
        stream.send(true)
        stream.send(false)
        var first = stream.subscribe().makeAsyncIterator()
        #expect(await first.next() == false)
        stream.send(true)
        var second = stream.subscribe().makeAsyncIterator()
        #expect(await first.next() == true)
        #expect(await second.next() == true)
        stream.finish()
        #expect(await first.next() == nil)
        #expect(await second.next() == nil)
    }

    @Test func aLatestValueStreamWithoutValueWaitsForTheFirst() async {
        let stream = LatestValueStream<Int>()
        var updates = stream.subscribe().makeAsyncIterator()
        stream.send(3)
        #expect(await updates.next() == 3)
        stream.finish()
        #expect(await updates.next() == nil)
    }

    @Test func aLatestValueStreamSendsOnlyChanges() async {
        let stream = LatestValueStream(true)
        var updates = stream.subscribe().makeAsyncIterator()
        #expect(await updates.next() == true)
        stream.send(true)   // the latest already: nobody hears of it
        stream.send(false)
        stream.send(false)
        stream.send(true)
        #expect(stream.latest == true)
        stream.finish()
        #expect(await updates.next() == false)
        #expect(await updates.next() == true)
        #expect(await updates.next() == nil)
    }

    @Test func aLatestValueStreamFinishedBeforeItsFirstSubscriberGivesTheLatestThenEnds() async {
        let stream = LatestValueStream(true)
        stream.finish()
        var updates = stream.subscribe().makeAsyncIterator()
        #expect(await updates.next() == true)
        #expect(await updates.next() == nil)
        let lifecycle = AlwaysForeground()
        lifecycle.stop()
        var stopped = lifecycle.updates().makeAsyncIterator()
        #expect(await stopped.next() == true)
        #expect(await stopped.next() == nil)
    }

    @Test func aFinishedPublisherEndsALaterChangeSubscription() async {
        let publisher = FlagPublisher()
        // The change broadcaster is made by the first subscription; finishing the publisher
        // before any subscription still ends a later subscriber's stream.
        publisher.finish()
        var late = publisher.changes.subscribe().makeAsyncIterator()
        #expect(await late.next() == nil)
    }
}
