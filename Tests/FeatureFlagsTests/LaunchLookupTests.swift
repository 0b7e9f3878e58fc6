import FeatureFlagsFlagd
import FeatureFlagsServices
import FeatureFlagsSigning
import Foundation
import Testing
import TestSupport
@testable import FeatureFlags

/// The launch path asks the runtime nothing it must search for. A cast to a protocol
/// (`as? any P`, `is any P`) or a generic type with a protocol requirement built from its name
/// (`Result<…, SomeError>`, `Set<…>`) makes the Swift runtime search every conformance the
/// process holds the first time — more in a larger app, paid at every launch.
/// Measured with a breakpoint on the runtime's conformance cache (Docs/Performance.md, "How
/// the budgets were met"): a signed launch searched 8 times for the library, an unsigned one
/// twice; now neither does. Endpoints say what they are through requirements instead of casts.
@Suite("Launch without run-time conformance searches")
struct LaunchLookupTests {
    let url = URL(string: "https://flags.example.com/flags")!

    @Test func everyFormatSaysWhatItIsWithoutACast() {
        let custom = FlagEndpoint(name: "custom", request: { _, _ in FlagRequest(url: url) }, decode: { _, _ in .flags([:]) })
        let endpoints: [(String, FlagEndpoint, streams: Bool, local: Bool)] = [
            ("json", .json(post: url), false, false),
            ("json template", .json(urlTemplate: "https://flags.example.com/{targetingKey}"), false, false),
            ("ofrep", .ofrep(baseURL: url), false, false),
            ("launchdarkly", .launchDarkly(mobileKey: "mob-1"), true, false),
            ("firebase", .firebaseRemoteConfig(projectID: "1", apiKey: "k", appID: "1:1:ios:1", appInstanceID: "i"), false, false),
            ("unleash", .unleash(baseURL: url, clientKey: "k"), false, false),
            ("flagd", .flagd(url: url), false, true),
            ("custom", custom, false, false),
        ]
        for (name, endpoint, streams, local) in endpoints {
            #expect((endpoint.format.asStreaming != nil) == streams, "\(name)")
            #expect((endpoint.format.asLocalEvaluation != nil) == local, "\(name)")
            // The requirement agrees with what a cast would say.
            #expect((endpoint.format as? any StreamingEndpoint != nil) == streams, "\(name)")
            #expect((endpoint.format as? any LocalEvaluationEndpoint != nil) == local, "\(name)")
        }
        let fetcher = FlagFetcher(endpoints: [.json(post: url), .flagd(url: url)])
        defer { fetcher.shutdown() }
        #expect(fetcher.policy.evaluatesLocally && fetcher.policy.localEvaluation?.name == "flagd")
    }

    /// The sources of the libraries an app links hold no cast to a protocol on the paths a
    /// launch and a fetch take, and the signature trust is not a `Result`.
    @Test func theLaunchPathHoldsNoProtocolCast() async throws {
        // Off the global executor's threads: loopback tests beside it need them.
        try await blocking {
            let sources = FixedLayoutTests.sources
            let launchPath = [
                "FeatureFlags/Fetching", "FeatureFlags/Provider", "FeatureFlags/Store", "FeatureFlags/Signing", "FeatureFlags/Endpoints",
                "FeatureFlags/JSON", "FeatureFlags/Fallback", "FeatureFlags/Serving", "FeatureFlagsSigning",
            ]
            let cast = try Regex(#"\b(as[?!]|is) \(?any "#)
            var files = 0
            var found: [String] = []
            for folder in launchPath {
                guard let walker = FileManager.default.enumerator(at: sources.appendingPathComponent(folder), includingPropertiesForKeys: nil) else {
                    continue
                }
                for case let file as URL in walker where file.pathExtension == "swift" {
                    files += 1
                    let text = try String(contentsOf: file, encoding: .utf8)
                    for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                        let code = line.trimmingCharacters(in: .whitespaces)
                        guard !code.hasPrefix("//") else { continue }
                        if code.contains(cast) || code.contains("Result<any DocumentVerifier") {
                            found.append("\(folder)/\(file.lastPathComponent):\(number + 1): \(code)")
                        }
                    }
                }
            }
            #expect(files > 40, "the sources were not found at \(sources.path)")
            #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
        }
    }
}
