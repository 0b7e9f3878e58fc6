import Foundation

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
public enum SystemAppLifecycle {
    /// The application notifications where UIKit, AppKit or WatchKit exist (observed on the
    /// main queue); "always in the foreground" elsewhere (servers, tools, Linux).
    public static func make() -> any AppLifecycle {
        #if canImport(UIKit) || canImport(AppKit) || canImport(WatchKit)
        return NotificationLifecycle()
        #else
        return AlwaysForeground()
        #endif
    }
}

/// A lifecycle that never goes to the background: for servers, command-line tools and
/// platforms without application notifications.
public final class AlwaysForeground: AppLifecycle {
    private let stream = Broadcaster<Bool>(replay: 1)

    /// Always in the foreground.
    public init() { stream.yield(true) }
    /// `true`.
    public var isForeground: Bool { true }
    /// `true`, once.
    public func updates() -> AsyncStream<Bool> { stream.subscribe() }
    /// Ends the streams.
    public func stop() { stream.finish() }
}

#if canImport(UIKit) || canImport(AppKit) || canImport(WatchKit)
#if canImport(UIKit)
import UIKit
#elseif canImport(AppKit)
import AppKit
#elseif canImport(WatchKit)
import WatchKit
#endif

/// The application's activation notifications, observed with `NotificationCenter`.
final class NotificationLifecycle: AppLifecycle {
    private let state = Locked(true)
    private let stream = Broadcaster<Bool>(replay: 1)
    private let observers = Locked<[any NSObjectProtocol]>([])

    init() {
        #if canImport(UIKit) && !os(watchOS)
        let foreground = UIApplication.willEnterForegroundNotification
        let background = UIApplication.didEnterBackgroundNotification
        #elseif canImport(AppKit)
        let foreground = NSApplication.didBecomeActiveNotification
        let background = NSApplication.didResignActiveNotification
        #else
        let foreground = WKApplication.willEnterForegroundNotification
        let background = WKApplication.didEnterBackgroundNotification
        #endif
        stream.yield(true)
        let center = NotificationCenter.default
        let up = center.addObserver(forName: foreground, object: nil, queue: .main) { [weak self] _ in self?.set(true) }
        let down = center.addObserver(forName: background, object: nil, queue: .main) { [weak self] _ in self?.set(false) }
        observers.withLock { $0 = [up, down] }
    }

    var isForeground: Bool { state.withLock { $0 } }
    func updates() -> AsyncStream<Bool> { stream.subscribe() }

    func stop() {
        let removed = observers.withLock { list -> [any NSObjectProtocol] in
            defer { list.removeAll() }
            return list
        }
        for observer in removed { NotificationCenter.default.removeObserver(observer) }
        stream.finish()
    }

    private func set(_ foreground: Bool) {
        let changed = state.withLock { value -> Bool in
            defer { value = foreground }
            return value != foreground
        }
        if changed { stream.yield(foreground) }
    }
}
#endif
