import Foundation
#if os(iOS) || os(tvOS) || os(visionOS)
import UIKit
#elseif os(watchOS)
import WatchKit
#elseif os(macOS)
import AppKit
#endif

/// Whether the app is in the foreground; in the background a provider closes its streams and stops its timers.
public protocol AppLifecycle: Sendable {
    /// Whether the app is in the foreground now.
    var isForeground: Bool { get }
    /// The current answer first, then each change; ends after ``stop()``.
    func updates() -> AsyncStream<Bool>
    /// Stops observing and ends the update streams. Idempotent.
    func stop()
}

/// The platform's lifecycle.
internal enum SystemAppLifecycle {
    /// The platform's application notifications on the main queue; always foreground elsewhere.
    public static func make() -> any AppLifecycle {
        #if os(iOS) || os(tvOS) || os(visionOS)
        return NotificationLifecycle.uiKit()
        #elseif os(watchOS)
        return NotificationLifecycle(
            foreground: WKApplication.willEnterForegroundNotification,
            background: WKApplication.didEnterBackgroundNotification)
        #elseif os(macOS)
        return NotificationLifecycle(
            foreground: NSApplication.didBecomeActiveNotification,
            background: NSApplication.didResignActiveNotification)
        #else
        return AlwaysForeground()
        #endif
    }
}

/// Foreground and background notifications observed with `NotificationCenter`; names chosen per platform.
final class NotificationLifecycle: AppLifecycle {
    private let stream: LatestValueStream<Bool>
    private let observers = Locked<[any NSObjectProtocol]>([])
    private let center: NotificationCenter

    /// Follows the notifications on `queue` (nil: the posting thread).
    init(foreground: Notification.Name, alsoForeground: Notification.Name? = nil, background: Notification.Name,
         center: NotificationCenter = .default, queue: OperationQueue? = .main, startsInForeground: Bool = true) {
        self.center = center
        stream = LatestValueStream(startsInForeground)
        var added = [
            center.addObserver(forName: foreground, object: nil, queue: queue) { [weak self] _ in self?.set(true) },
            center.addObserver(forName: background, object: nil, queue: queue) { [weak self] _ in self?.set(false) },
        ]
        if let alsoForeground {
            added.append(center.addObserver(forName: alsoForeground, object: nil, queue: queue) { [weak self] _ in self?.set(true) })
        }
        observers.withLock { $0 = added }
    }

    var isForeground: Bool { stream.latest ?? true }
    func updates() -> AsyncStream<Bool> { stream.subscribe() }

    func stop() {
        let removed = observers.withLock { list -> [any NSObjectProtocol] in
            defer { list.removeAll() }
            return list
        }
        for observer in removed { center.removeObserver(observer) }
        stream.finish()
    }

    /// Takes `foreground` as the state now, telling the subscribers if it changed.
    func set(_ foreground: Bool) { stream.send(foreground) }
}

#if os(iOS) || os(tvOS) || os(visionOS)
extension NotificationLifecycle {
    /// UIKit's: the state at start, then notifications (`didBecomeActive` too: `willEnterForeground` misses launches).
    static func uiKit() -> NotificationLifecycle {
        let onMain = Thread.isMainThread
        let known: Bool? = onMain ? MainActor.assumeIsolated { applicationIsInForeground() } : nil
        let lifecycle = NotificationLifecycle(
            foreground: UIApplication.willEnterForegroundNotification, alsoForeground: UIApplication.didBecomeActiveNotification,
            background: UIApplication.didEnterBackgroundNotification, startsInForeground: known ?? true)
        if !onMain {
            // Ask on the main queue, after the notifications already posted.
            DispatchQueue.main.async { [weak lifecycle] in
                if let now = MainActor.assumeIsolated({ applicationIsInForeground() }) { lifecycle?.set(now) }
            }
        }
        return lifecycle
    }

    /// Whether the app is not in the background; nil in an app extension (`UIApplication.shared` is unavailable there).
    @MainActor
    private static func applicationIsInForeground() -> Bool? {
        guard !Bundle.main.bundlePath.hasSuffix(".appex") else { return nil }
        let type: AnyObject = UIApplication.self
        guard let application = type.value(forKey: "sharedApplication") as? UIApplication else { return nil }
        return application.applicationState != .background
    }
}
#endif
