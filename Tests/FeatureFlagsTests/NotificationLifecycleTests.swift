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

    func make(_ center: NotificationCenter, startsInForeground: Bool = true) -> NotificationLifecycle {
        NotificationLifecycle(
            foreground: Self.foreground, alsoForeground: Self.active, background: Self.background, center: center, queue: nil,
            startsInForeground: startsInForeground)
    }

    static let active = Notification.Name("test.didBecomeActive")

    /// An app launched in the background (a refresh task, a silent push) starts there: no poll,
    /// no stream, no healthy time; either foreground notification brings it forward.
    @Test func aLaunchInTheBackgroundStartsThereUntilTheAppComesForward() async {
        let center = NotificationCenter()
        for name in [Self.foreground, Self.active] {
            let lifecycle = make(center, startsInForeground: false)
            defer { lifecycle.stop() }
            #expect(!lifecycle.isForeground)
            let updates = lifecycle.updates()
            center.post(name: name, object: nil)
            #expect(lifecycle.isForeground)
            center.post(name: Self.active, object: nil)   // no change: not repeated
            lifecycle.stop()
            var seen: [Bool] = []
            for await foreground in updates { seen.append(foreground) }
            #expect(seen == [false, true], "\(name)")
        }
    }

    /// A state learnt later (UIKit's, asked on the main thread) moves the lifecycle as a
    /// notification would.
    @Test func aStateLearntLaterIsTakenLikeANotification() async {
        let lifecycle = make(NotificationCenter())
        defer { lifecycle.stop() }
        lifecycle.set(false)
        #expect(!lifecycle.isForeground)
        lifecycle.set(true)
        #expect(lifecycle.isForeground)
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
