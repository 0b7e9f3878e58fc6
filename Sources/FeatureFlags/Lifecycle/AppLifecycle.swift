import Foundation
#if os(iOS) || os(tvOS) || os(visionOS)
import UIKit
#elseif os(watchOS)
import WatchKit
#elseif os(macOS)
import AppKit
#endif

/// Whether the app is in the foreground: where a provider keeps its change streams open and
/// polls, or in the background, where it closes them (after a short grace) and stops its
/// timers. Injected like ``Reachability`` so that tests switch it by hand
/// (`ManualLifecycle` in FeatureFlagsTesting).
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
    /// The application's foreground and background notifications where the platform has them
    /// (UIKit's `UIApplication` on iOS, tvOS and visionOS; WatchKit's `WKApplication` on
    /// watchOS; AppKit's `NSApplication` activation on macOS), observed on the main queue;
    /// "always in the foreground" elsewhere (servers, tools, Linux).
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

/// A lifecycle that never goes to the background: for servers, command-line tools and
/// platforms without application notifications.
package final class AlwaysForeground: AppLifecycle {
    private let stream = LatestValueStream(true)

    /// Always in the foreground.
    public init() {}
    /// `true`.
    public var isForeground: Bool { true }
    /// `true`, once.
    public func updates() -> AsyncStream<Bool> { stream.subscribe() }
    /// Ends the streams.
    public func stop() { stream.finish() }
}

/// The application's foreground and background notifications, observed with
/// `NotificationCenter`. The platform chooses the two names (``SystemAppLifecycle/make()``);
/// everything else is the same on every platform, so Linux tests drive it with names of their own.
final class NotificationLifecycle: AppLifecycle {
    private let state: Locked<Bool>
    private let stream: LatestValueStream<Bool>
    private let observers = Locked<[any NSObjectProtocol]>([])
    private let center: NotificationCenter

    /// Starts in the foreground unless `startsInForeground` says otherwise, and follows the
    /// `foreground` notification (and `alsoForeground`, when given) and the `background` one as
    /// `center` posts them, on `queue` (nil: the posting thread).
    init(foreground: Notification.Name, alsoForeground: Notification.Name? = nil, background: Notification.Name,
         center: NotificationCenter = .default, queue: OperationQueue? = .main, startsInForeground: Bool = true) {
        self.center = center
        state = Locked(startsInForeground)
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

    var isForeground: Bool { state.withLock { $0 } }
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
    func set(_ foreground: Bool) {
        let changed = state.withLock { value -> Bool in
            defer { value = foreground }
            return value != foreground
        }
        if changed { stream.yield(foreground) }
    }
}

#if os(iOS) || os(tvOS) || os(visionOS)
extension NotificationLifecycle {
    /// UIKit's: the application's state at the start, then its foreground and background
    /// notifications. An app launched in the background (a refresh task, a silent push, a
    /// location event) starts in the background — no poll, no stream, and the crash-loop guard's
    /// healthy time not running. `didBecomeActive` counts as foreground too: it comes at every
    /// launch into the foreground (`willEnterForeground` does not, without scenes), so a state
    /// read early in a launch as background is corrected as soon as the app is active.
    static func uiKit() -> NotificationLifecycle {
        let onMain = Thread.isMainThread
        let known: Bool? = onMain ? MainActor.assumeIsolated { applicationIsInForeground() } : nil
        let lifecycle = NotificationLifecycle(
            foreground: UIApplication.willEnterForegroundNotification, alsoForeground: UIApplication.didBecomeActiveNotification,
            background: UIApplication.didEnterBackgroundNotification, startsInForeground: known ?? true)
        if !onMain {
            // The application is asked on the main thread only: there, after the notifications
            // posted so far (they are observed on the main queue).
            DispatchQueue.main.async { [weak lifecycle] in
                if let now = MainActor.assumeIsolated({ applicationIsInForeground() }) { lifecycle?.set(now) }
            }
        }
        return lifecycle
    }

    /// Whether the app is in the foreground now (active or inactive, not in the background);
    /// nil in an app extension, which has no application to ask. `UIApplication.shared` is
    /// unavailable where the package is compiled for app extensions, so the class is asked for
    /// its shared application by name.
    @MainActor
    private static func applicationIsInForeground() -> Bool? {
        guard !Bundle.main.bundlePath.hasSuffix(".appex") else { return nil }
        let type: AnyObject = UIApplication.self
        guard let application = type.value(forKey: "sharedApplication") as? UIApplication else { return nil }
        return application.applicationState != .background
    }
}
#endif
