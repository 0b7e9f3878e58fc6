import Foundation
import Testing
@testable import FeatureFlags

/// The notification-driven lifecycle Apple builds use (`SystemAppLifecycle.make()` gives it
/// UIKit's, WatchKit's or AppKit's names); the same code, driven here by names of our own on a
/// private notification center, delivered on the posting thread.
@Suite("Notification lifecycle")
struct NotificationLifecycleTests {
    static let foreground = Notification.Name("test.willEnterForeground")
    static let background = Notification.Name("test.didEnterBackground")

    func make(_ center: NotificationCenter) -> NotificationLifecycle {
        NotificationLifecycle(foreground: Self.foreground, background: Self.background, center: center, queue: nil)
    }

    @Test func startsInTheForegroundAndFollowsThePostedNotifications() async {
        let center = NotificationCenter()
        let lifecycle = make(center)
        defer { lifecycle.stop() }
        #expect(lifecycle.isForeground)
        center.post(name: Self.background, object: nil)
        #expect(!lifecycle.isForeground)
        center.post(name: Self.foreground, object: nil)
        #expect(lifecycle.isForeground)
    }

    @Test func updatesReplayTheCurrentAnswerAndOnlyChanges() async {
        let center = NotificationCenter()
        let lifecycle = make(center)
        let updates = lifecycle.updates()
        center.post(name: Self.background, object: nil)
        center.post(name: Self.background, object: nil)   // no change: not repeated
        center.post(name: Self.foreground, object: nil)
        center.post(name: Notification.Name("test.other"), object: nil)
        lifecycle.stop()
        var seen: [Bool] = []
        for await foreground in updates { seen.append(foreground) }
        #expect(seen == [true, false, true])
    }

    @Test func afterStopNotificationsMoveNothingAndStopIsIdempotent() async {
        let center = NotificationCenter()
        let lifecycle = make(center)
        lifecycle.stop()
        lifecycle.stop()
        center.post(name: Self.background, object: nil)
        #expect(lifecycle.isForeground)
        var seen: [Bool] = []
        for await foreground in lifecycle.updates() { seen.append(foreground) }
        #expect(seen.count <= 1)
    }

    @Test func linuxIsAlwaysInTheForeground() {
        #if os(Linux)
        let lifecycle = SystemAppLifecycle.make()
        defer { lifecycle.stop() }
        #expect(lifecycle is AlwaysForeground)
        #endif
    }
}
