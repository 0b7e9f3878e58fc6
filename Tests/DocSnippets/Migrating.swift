import FeatureFlags
import FeatureFlagsServices
import Foundation

func migratingFromLaunchDarkly() {
    // snippet: Migrating LaunchDarkly
    let context = EvaluationContext(targetingKey: "user-key-123", attributes: ["venue": "venue-42"])
    let flags = FeatureFlagProvider.start(context: context, endpoint: .launchDarkly(mobileKey: "mob-…"))

    // Before: LDClient.get()!.boolVariation(forKey: "new_checkout", defaultValue: false)
    let showNewCheckout = flags.value(.newCheckout)
    // end snippet
    _ = showNewCheckout
    flags.shutdown()
}

func migratingSideBySide() {
    // snippet: Migrating start
    // LaunchDarkly
    // LDClient.start(config: LDConfig(mobileKey: "mob-…", autoEnvAttributes: .enabled), context: context)
    // let client = LDClient.get()!

    // ConfigCat
    // let client = ConfigCatClient.get(sdkKey: "…")

    // Firebase Remote Config
    // FirebaseApp.configure(); let remoteConfig = RemoteConfig.remoteConfig(); remoteConfig.fetchAndActivate()

    // FeatureFlags, against LaunchDarkly's service (import FeatureFlags, FeatureFlagsServices)
    let flags = FeatureFlagProvider.start(
        context: EvaluationContext(targetingKey: "user-key-123"),
        endpoint: .launchDarkly(mobileKey: "mob-…"))
    // end snippet
    flags.shutdown()
}

func migratingFromFirebase(installationID: String) {
    // snippet: Migrating Firebase
    let endpoint = FlagEndpoint.firebaseRemoteConfig(
        projectID: "508767403424", apiKey: "AIza…", appID: "1:508767403424:ios:…", appInstanceID: installationID)
    var configuration = FeatureFlagProvider.Configuration(bundledDefaults: .values(["new_checkout": false]))
    configuration.pollInterval = .seconds(3600)             // minimumFetchInterval
    let flags = FeatureFlagProvider(context: EvaluationContext(targetingKey: installationID),
                                    fetcher: FlagFetcher(endpoint: endpoint), store: LastKnownGoodStore(),
                                    configuration: configuration)

    // Before: RemoteConfig.remoteConfig().configValue(forKey: "new_checkout").boolValue
    let showNewCheckout = flags.value(.newCheckout)
    // end snippet
    _ = showNewCheckout
    flags.shutdown()
}
