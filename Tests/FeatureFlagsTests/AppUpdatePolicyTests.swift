import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsUI
import FeatureFlagsTesting
import FlagServer

/// Seed 004: required and recommended updates compared with an app version `X.Y.Z.a`.
@Suite("App update policy")
struct AppUpdatePolicyTests {
    /// The seed's example app: `CFBundleVersion` 1.2.3.400.
    private let app = AppVersion(major: 1, minor: 2, patch: 3, build: 400)

    private func update(_ version: String) throws -> ApplicationUpdate {
        try #require(ApplicationUpdate(flagValue: ["version": .string(version), "download": "https://your.appstore.link/"]))
    }

    @Test func aGreaterBuildNumberIsApplicable() throws {
        // "the build number 500 is greater than the application's build number 400"
        #expect(try update("1.2.3.500").isApplicable(to: app))
    }

    @Test func anOmittedBuildNumberIsNotApplicableToTheSameVersionWithABuild() throws {
        // "if you supply 1.2.3 - isApplicable returns false"
        #expect(try !update("1.2.3").isApplicable(to: app))
    }

    @Test func aGreaterPatchIsApplicable() throws {
        // "if you supply 1.2.4 - isApplicable returns true"
        #expect(try update("1.2.4").isApplicable(to: app))
    }

    @Test(arguments: [
        ("1.2.3.400", false), ("1.2.3.399", false), ("1.2.2.900", false), ("1.1.9", false), ("0.9.9.999", false),
        ("1.3.0", true), ("2.0.0", true), ("1.2.3.401", true), ("1.2.10", true),
    ])
    func versionsCompareComponentByComponent(_ remote: String, _ applicable: Bool) throws {
        #expect(try update(remote).isApplicable(to: app) == applicable)
    }

    @Test func anAppWithoutABuildNumberCountsItAsZero() throws {
        let plain = try #require(AppVersion("1.2.3"))
        #expect(try update("1.2.3.1").isApplicable(to: plain))
        #expect(try !update("1.2.3").isApplicable(to: plain))
    }

    /// Equality agrees with the order (Comparable's contract): `1.2.3` and `1.2.3.0` are
    /// neither older nor newer than each other, so they are equal and hash alike — a `Set` or
    /// a dictionary of versions holds one of them, and `==` says what `<` implies.
    @Test func aMissingBuildNumberEqualsZero() throws {
        let plain = try #require(AppVersion("1.2.3"))
        let zero = try #require(AppVersion("1.2.3.0"))
        #expect(!(plain < zero) && !(zero < plain))
        #expect(plain == zero)
        #expect(Set([plain, zero]).count == 1)
        #expect(plain != AppVersion("1.2.3.1"))
        #expect(plain.description == "1.2.3" && zero.description == "1.2.3.0", "each still says what it was given")
    }

    @Test(arguments: ["", "1.2.3.4.5", "v1.2.3", "1.2.3-beta", "1..3", "1.2.x", " 1.2.3", "1.2.3.", "-1.2.3", "1.2.3.9999999999"])
    func malformedVersionsAreRejected(_ text: String) {
        #expect(AppVersion(text) == nil)
    }

    /// Xcode's new-project defaults are `CFBundleShortVersionString` 1.0 and `CFBundleVersion` 1:
    /// they used to read as no version, so no required update was ever shown.
    @Test func xcodesDefaultBundleVersionsRead() throws {
        #expect(AppVersion("1") == AppVersion(major: 1, minor: 0, patch: 0))
        #expect(AppVersion("1.0") == AppVersion(major: 1, minor: 0, patch: 0))
        #expect(AppVersion("2.5")?.description == "2.5.0")
        let defaults = try #require(AppVersion.from(bundleVersion: "1", shortVersion: "1.0"))
        #expect(defaults == AppVersion(major: 1, minor: 0, patch: 0, build: 1))
        #expect(try update("1.0.1").isApplicable(to: defaults))
        #expect(try update("1.0.0.2").isApplicable(to: defaults))
        #expect(try !update("1.0.0.1").isApplicable(to: defaults))
        #expect(try !update("1.0").isApplicable(to: defaults))
        // A full CFBundleVersion wins; a dotted build number does not become a build.
        #expect(AppVersion.from(bundleVersion: "1.2.3.400", shortVersion: "1.2") == AppVersion("1.2.3.400"))
        #expect(AppVersion.from(bundleVersion: "7.1", shortVersion: "1.2") == AppVersion("1.2"))
        #expect(AppVersion.from(bundleVersion: nil, shortVersion: "3") == AppVersion("3.0.0"))
        #expect(AppVersion.from(bundleVersion: "12", shortVersion: nil) == AppVersion("12"))
        #expect(AppVersion.from(bundleVersion: "beta", shortVersion: "x") == nil)
    }

    @Test func versionsParseAndPrintAsGiven() {
        #expect(AppVersion("1.2.3")?.description == "1.2.3")
        #expect(AppVersion("10.20.30.40")?.description == "10.20.30.40")
        #expect(AppVersion("01.2.3") == AppVersion(major: 1, minor: 2, patch: 3))
        #expect(AppVersion(major: -1, minor: 0, patch: 0) == AppVersion("0.0.0"))
    }

    @Test func malformedUpdatesAreTypeMismatchesAndReadAsNone() {
        let client = InMemoryFlagClient([
            "ios_required_update": ["version": "1.2.x", "download": "https://x.example/"],
            "ios_recommended_update": ["version": "1.2.4", "download": "not a url"],
        ])
        #expect(client.value(.requiredUpdate) == nil)
        #expect(client.details(.requiredUpdate).errorCode == .typeMismatch)
        #expect(client.value(.recommendedUpdate) == nil)
        #expect(client.updateAdvice(for: app) == nil)
    }

    @Test func aRequiredUpdateWinsOverARecommendedOne() throws {
        let client = InMemoryFlagClient([
            "ios_required_update": ["version": "1.2.3.500", "download": "https://apps.example/app"],
            "ios_recommended_update": ["version": "1.3.0", "download": "https://apps.example/app"],
        ])
        let advice = client.updateAdvice(for: app)
        let expected = try update("1.2.3.500").with(download: "https://apps.example/app")
        #expect(advice?.required == true && advice?.update == expected)
        // Once installed, the recommended one remains.
        let installed = try #require(AppVersion("1.2.3.500"))
        guard let (next, required) = client.updateAdvice(for: installed), !required else {
            Issue.record("expected the recommended update")
            return
        }
        #expect(next.version.description == "1.3.0")
        #expect(try client.updateAdvice(for: #require(AppVersion("1.3.0"))) == nil)
    }

    @Test func updatesSentAsTextAreRead() throws {
        // Firebase Remote Config sends JSON parameters as strings.
        let client = InMemoryFlagClient([
            "ios_recommended_update": #"{"version": "1.2.4", "download": "itms-apps://itunes.apple.com/app/id1"}"#
        ])
        let update = try #require(client.value(.recommendedUpdate))
        #expect(update.download.scheme == "itms-apps")
        let advice = client.updateAdvice(for: app)
        #expect(advice?.update == update && advice?.required == false)
    }

    @Test func theKeysCanBeRenamed() {
        let android = FlagKey<ApplicationUpdate?>.update(named: "android_required_update")
        let client = InMemoryFlagClient(["android_required_update": ["version": "9.0.0", "download": "https://play.example/"]])
        #expect(client.updateAdvice(for: app, required: android)?.required == true)
    }

    @Test func updatesRoundTripThroughCodableAndFlagValues() throws {
        let original = try update("1.2.3.500")
        let data = try JSONEncoder().encode(original)
        #expect(try JSONDecoder().decode(ApplicationUpdate.self, from: data) == original)
        #expect(ApplicationUpdate(flagValue: original.flagValue) == original)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(ApplicationUpdate.self, from: Data(#"{"version":"x"}"#.utf8)) }
    }

    @Test func theRunningAppsVersionIsReadFromItsBundleWhenItHasOne() {
        // A test runner on Linux has no Info.plist: no version, so no update applies.
        if AppVersion.current() == nil {
            let update = ApplicationUpdate(version: AppVersion(major: 99, minor: 0, patch: 0), download: URL(fileURLWithPath: "/"))
            #expect(!update.isApplicable)
        }
    }

    @Test(.hangLimit())
    func aRequiredUpdatePublishedOnTheServerReachesTheApp() async throws {
        var document = ServerDocument.seedExample
        document.base.flags["ios_required_update"] = FlagEntry(value: ["version": "1.2.3.500", "download": "https://apps.example/app"])
        let f = try ProviderFixture(document: document)
        defer { f.stop() }
        _ = await f.provider.refresh()
        guard let (required, isRequired) = f.provider.updateAdvice(for: app), isRequired else {
            Issue.record("expected a required update")
            return
        }
        #expect(required.version == AppVersion("1.2.3.500"))
    }
}

extension ApplicationUpdate {
    fileprivate func with(download: String) -> ApplicationUpdate {
        ApplicationUpdate(version: version, download: URL(string: download) ?? self.download)
    }
}

extension AppUpdatePolicyTests {
    @Test func nullOrEmptyMeansNoUpdateWithoutAnError() {
        let client = InMemoryFlagClient(["ios_required_update": .null, "ios_recommended_update": ""])
        #expect(client.value(.requiredUpdate) == nil)
        #expect(client.details(.requiredUpdate).errorCode == nil)
        #expect(client.details(.recommendedUpdate).errorCode == nil)
    }
}
