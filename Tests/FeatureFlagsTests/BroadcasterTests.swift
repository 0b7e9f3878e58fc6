import Foundation
import Testing
@testable import FeatureFlags

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
        stream.yield(true)
        stream.yield(false)
        var first = stream.subscribe().makeAsyncIterator()
        #expect(await first.next() == false)
        stream.yield(true)
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
        stream.yield(3)
        #expect(await updates.next() == 3)
        stream.finish()
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
