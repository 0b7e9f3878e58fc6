import Dispatch
import Foundation
import Testing
import TestSupport
@testable import FeatureFlags

/// The app's event handler: every event in order while it keeps up; a bounded wait, with the
/// number missed reported, when it does not.
@Suite("Event handler queue")
struct EventHandlerQueueTests {
    /// A handler that records what it hears and, when asked, stops at its first event until
    /// released — an app handler stuck on the network.
    final class StuckHandler: Sendable {
        let heard = Locked<[FlagEvent]>([])
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let stuck: Bool

        init(stuck: Bool) { self.stuck = stuck }

        func handle(_ event: FlagEvent) {
            let first = heard.withLock { heard in
                heard.append(event)
                return heard.count == 1
            }
            if first, stuck {
                entered.signal()
                release.wait()
            }
        }

        var lines: [String] { heard.withLock { $0 }.map(\.description) }
    }

    static func tracked(_ index: Int) -> FlagEvent { tracked(named: "e\(index)") }

    static func tracked(named name: String) -> FlagEvent {
        .tracked(FlagTrackingEvent(name: name, value: nil, attributes: [:], context: EvaluationContext(targetingKey: "u")))
    }

    /// Delivers `e0`, waits until the handler is stuck in it, delivers `e1` … up to `count`,
    /// releases the handler and waits for it: what it heard, one short line per event.
    static func stuckRun(capacity: Int, count: Int) -> (handler: StuckHandler, queue: EventHandlerQueue, lines: [String]) {
        let handler = StuckHandler(stuck: true)
        let queue = EventHandlerQueue(capacity: capacity) { handler.handle($0) }
        queue.deliver(tracked(0))
        handler.entered.wait()  // the handler is inside e0 and stays there
        for index in 1..<count { queue.deliver(tracked(index)) }
        handler.release.signal()
        queue.drain()
        return (handler, queue, handler.lines.map { $0.components(separatedBy: " context=")[0] })
    }

    @Test func aHandlerThatKeepsUpHearsEveryEventInOrder() {
        let handler = StuckHandler(stuck: false)
        let queue = EventHandlerQueue(capacity: 8) { handler.handle($0) }
        for index in 0..<200 {
            queue.deliver(Self.tracked(index))
            if index % 4 == 3 { queue.drain() }  // never more than 4 wait
        }
        queue.drain()
        #expect(handler.heard.withLock { $0 }.compactMap(\.tracking?.name) == (0..<200).map { "e\($0)" })
        #expect(!handler.heard.withLock { $0 }.contains { $0.kind == .eventsDropped })
    }

    @Test func aStuckHandlerKeepsOnlyTheNewestAndHearsHowManyItMissed() {
        let run = Self.stuckRun(capacity: 8, count: 100)
        #expect(run.lines == ["tracked e0", "events_dropped count=91"] + (92..<100).map { "tracked e\($0)" })
        let dropped = run.handler.heard.withLock { $0 }.first { $0.kind == .eventsDropped }
        #expect(dropped?.droppedCount == 91)
        #expect(dropped?.metric == FlagMetric(name: "rc_events_dropped", kind: "counter", value: 91))
    }

    @Test func aGapIsReportedOnceAndLaterEventsFollowInOrder() {
        let run = Self.stuckRun(capacity: 2, count: 6)
        for index in 6...7 { run.queue.deliver(Self.tracked(index)) }
        run.queue.drain()
        let names = run.handler.lines.map { $0.components(separatedBy: " context=")[0] }
        #expect(names == ["tracked e0", "events_dropped count=3", "tracked e4", "tracked e5", "tracked e6", "tracked e7"])
    }

    @Test func aHandlerMayEmitWhileItHandlesAndThoseComeAfter() {
        let heard = Locked<[String]>([])
        let box = Locked<EventHandlerQueue?>(nil)
        let queue = EventHandlerQueue(capacity: 4) { event in
            heard.withLock { $0.append(event.tracking?.name ?? event.kind.name) }
            if event.tracking?.name == "outer" { box.withLock { $0 }?.deliver(Self.tracked(1)) }
        }
        box.withLock { $0 = queue }
        queue.deliver(Self.tracked(named: "outer"))
        queue.drain()
        queue.drain()  // the inner event was queued behind the loop that ran the outer one
        #expect(heard.withLock { $0 } == ["outer", "e1"])
        box.withLock { $0 = nil }
    }

    @Test func aCapacityBelowOneKeepsOne() {
        #expect(Self.stuckRun(capacity: 0, count: 4).lines == ["tracked e0", "events_dropped count=2", "tracked e3"])
    }

    /// Four threads deliver at once past the bound: every event is heard or counted as missed,
    /// and each thread's events are heard in the order it sent them.
    @Test func concurrentDeliveriesAreEachHeardOrCountedAndKeepTheirOrder() async throws {
        // Off the global executor's threads: loopback tests beside it need them.
        try await blocking {
            let heard = Locked<[FlagEvent]>([])
            let queue = EventHandlerQueue(capacity: 64) { event in heard.withLock { $0.append(event) } }
            DispatchQueue.concurrentPerform(iterations: 4) { thread in
                for index in 0..<2_000 {
                    queue.deliver(Self.tracked(named: "\(thread)/\(index)"))
                }
            }
            queue.drain()
            let events = heard.withLock { $0 }
            let names = events.compactMap(\.tracking?.name)
            #expect(names.count + events.compactMap(\.droppedCount).reduce(0, +) == 8_000)
            for thread in 0..<4 {
                let indices = names.filter { $0.hasPrefix("\(thread)/") }.map { Int($0.split(separator: "/")[1])! }
                #expect(indices == indices.sorted(), "thread \(thread) in order")
            }
            #expect(events.last?.kind != .eventsDropped, "a notice always comes before an event")
            #expect(zip(events, events.dropFirst()).allSatisfy { !($0.kind == .eventsDropped && $1.kind == .eventsDropped) })
        }
    }

    /// Through a provider: an app that tracks 3,000 events while its handler is stuck keeps at
    /// most 1,024 of them waiting, and the handler learns how many it missed.
    @Test func aProvidersStuckHandlerHoldsAtMostTheBoundAndAccountsForEveryEvent() throws {
        let handler = StuckHandler(stuck: true)
        let fixture = try ProviderFixture(configuration: .init(eventHandler: { handler.handle($0) }, changeStreams: false))
        defer { fixture.stop() }
        let provider = fixture.provider
        provider.track("wake")  // whatever the handler hears first, it stays there
        handler.entered.wait()
        for index in 0..<3_000 { provider.track("t\(index)") }
        handler.release.signal()
        provider.waitForEventHandler()
        let heard = handler.heard.withLock { $0 }
        let tracked = heard.compactMap(\.tracking?.name).filter { $0.hasPrefix("t") }
        let dropped = heard.compactMap(\.droppedCount).reduce(0, +)
        #expect(tracked.count <= EventHandlerQueue.defaultCapacity)
        #expect(dropped > 0)
        #expect(tracked.last == "t2999", "the newest are kept")
        // Every tracked event was either heard or counted as missed (other events may be missed too).
        #expect(tracked.count + dropped >= 3_000)
        #expect(tracked == tracked.sorted { Int($0.dropFirst())! < Int($1.dropFirst())! }, "in order")
    }
}
