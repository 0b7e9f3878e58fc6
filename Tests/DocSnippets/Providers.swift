import FeatureFlags
import FeatureFlagsFlagd
import FeatureFlagsServices
import Foundation

func providersChain() {
    // snippet: Providers chain
    let fetcher = FlagFetcher(endpoints: [
        FlagEndpoint.ofrep(baseURL: URL(string: "https://flags.example.com")!, headers: ["Authorization": "Bearer …"]),
        FlagEndpoint.json(urlTemplate: "https://cdn.example.com/flags/{venue}.json"),
    ])
    // end snippet
    _ = fetcher
}

func providersFlagd(store: LastKnownGoodStore) {
    // snippet: Providers flagd
    let fetcher = FlagFetcher(endpoint: .flagd(url: URL(string: "https://cdn.example.com/flags/flagd.json")!))
    let provider = FeatureFlagProvider(context: user, fetcher: fetcher, store: store)
    provider.identify(user.with("venue", "venue-51"))   // evaluated at once, no request needed
    // end snippet
}

func providersEndpoints(installationID: String) {
    // snippet: Providers OFREP
    let ofrep = FlagEndpoint.ofrep(baseURL: URL(string: "https://flags.example.com")!,  // before /ofrep/v1
                              headers: ["Authorization": "Bearer …"])               // or X-API-Key
    // end snippet
    // snippet: Providers OFREP environment
    let settings = OFREPEnvironment()                      // OFREP_ENDPOINT, OFREP_HEADERS, OFREP_TIMEOUT_MS
    for problem in settings.problems { print("flags: \(problem)") }
    let fromEnvironment = FlagFetcher(
        endpoint: settings.endpoint() ?? ofrep,             // a URL given here would win
        configuration: .init(budget: settings.timeout ?? .seconds(2)))
    // end snippet
    _ = fromEnvironment
    // snippet: Providers LaunchDarkly
    let launchDarkly = FlagEndpoint.launchDarkly(mobileKey: "mob-…")                    // GET, reasons on
    let largeContexts = FlagEndpoint.launchDarkly(mobileKey: "mob-…", useReport: true)  // REPORT, for large contexts
    // end snippet
    // snippet: Providers LaunchDarkly stream
    let streaming = FlagEndpoint.launchDarkly(
        mobileKey: "mob-…",
        baseURL: nil,          // nil: https://clientsdk.launchdarkly.com
        streamBaseURL: nil)    // nil: https://clientstream.launchdarkly.com
    let pollsOnly = FlagEndpoint.launchDarkly(mobileKey: "mob-…", streaming: false)
    // end snippet
    // snippet: Providers Firebase
    let firebase = FlagEndpoint.firebaseRemoteConfig(
        projectID: "508767403424", apiKey: "AIza…", appID: "1:508767403424:ios:…", appInstanceID: installationID,
        extraFields: ["appVersion": "1.2.3", "languageCode": "en-US"])
    // end snippet
    // snippet: Providers Unleash
    let unleash = FlagEndpoint.unleash(baseURL: URL(string: "https://unleash.example.com")!,  // before /api/frontend
                                  clientKey: "*:production.…", appName: "pos")
    // end snippet
    _ = (ofrep, launchDarkly, largeContexts, streaming, pollsOnly, firebase, unleash)
}

func providersServiceSet(user: EvaluationContext, newCheckout: FlagKey<Bool>) {
    // snippet: Providers service set
    let flags = FeatureFlagProvider.start(
        context: user,
        endpoints: [
            FlagEndpoint.flagd(url: URL(string: "https://cdn.example.com/flags/flagd.json")!).named("rules"),  // the new service, first
            FlagEndpoint.launchDarkly(mobileKey: "mob-…").named("launchdarkly"),
        ],
        fetch: FlagFetcher.Configuration(strategy: .firstMatch))
    let from = flags.details(newCheckout).service   // "rules" or "launchdarkly"
    // end snippet
    _ = from
}
