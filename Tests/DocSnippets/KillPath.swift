import FeatureFlags
import Foundation

func killPathConfiguration() {
    // snippet: KillPath configuration
    var configuration = FeatureFlagProvider.Configuration()
    configuration.changeStreams = true            // the default; the service decides if there are any
    configuration.heartbeatDeadline = .seconds(45) // a silent stream is half-open after this
    configuration.backgroundStreamGrace = .seconds(10)
    configuration.foregroundRefreshAge = .seconds(60)
    // end snippet
    _ = configuration
}

#if canImport(BackgroundTasks) && os(iOS)
// snippet: KillPath background task
import BackgroundTasks
// end snippet

func killPathBackgroundTask(flags: FeatureFlagProvider, scheduleFlagRefresh: @escaping @Sendable () -> Void) {
    // snippet: KillPath background task
    BGTaskScheduler.shared.register(forTaskWithIdentifier: "com.example.app.flags", using: nil) { task in
        nonisolated(unsafe) let task = task   // BGTask is not Sendable; it may be completed from any thread
        let work = Task {
            let outcome = await flags.refreshInBackground(deadline: .seconds(20))
            task.setTaskCompleted(success: outcome.isSuccess)
            scheduleFlagRefresh()   // submit the next BGAppRefreshTaskRequest
        }
        task.expirationHandler = { work.cancel() }
    }
    // end snippet
}
#endif

#if canImport(SwiftUI) && os(iOS)
import SwiftUI

func killPathBackgroundTaskSwiftUI(flags: FeatureFlagProvider, scheduleFlagRefresh: @escaping @Sendable () -> Void) -> some Scene {
    // snippet: KillPath background task SwiftUI
    WindowGroup { RootView(flags: flags) }
        .backgroundTask(.appRefresh("com.example.app.flags")) {
            await flags.refreshInBackground(deadline: .seconds(20))   // cancelled when the time is up
            scheduleFlagRefresh()
        }
    // end snippet
}
#endif

#if canImport(Darwin)
func killPathAppGroup(fetcher: FlagFetcher) {
    // snippet: KillPath app group
    let container = FileManager.default.containerURL(forSecurityApplicationGroupIdentifier: "group.com.example.app")!
    let file = container.appendingPathComponent("FeatureFlags/flags.lkg")

    // The app
    let provider = FeatureFlagProvider(context: user, fetcher: fetcher, store: LastKnownGoodStore(fileURL: file))

    // The widget or extension
    let flags = FallbackClient(fileURL: file, context: user)
    // end snippet
    _ = (provider, flags)
}
#endif

func killPathCrashLoopGuard(fetcher: FlagFetcher, store: LastKnownGoodStore) {
    // snippet: KillPath crash-loop guard
    var configuration = FeatureFlagProvider.Configuration()
    configuration.crashLoopGuard = CrashLoopGuard(launchesBeforeSafeMode: 2, healthyAfter: .seconds(30))
    let flags = FeatureFlagProvider(context: user, fetcher: fetcher, store: store, configuration: configuration)

    // Once the app is past its risky start (first screen shown, data loaded):
    flags.markHealthy()
    // end snippet
}
