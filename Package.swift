// swift-tools-version: 6.0
// FeatureFlags — feature flags and remote configuration that keep working offline.
// Toolchain only: this package declares no package dependencies.
import PackageDescription

let package = Package(
    name: "FeatureFlags",
    platforms: [.iOS(.v16), .macOS(.v13), .tvOS(.v16), .watchOS(.v9)],
    products: [
        .library(name: "FeatureFlags", targets: ["FeatureFlags"]),
        .library(name: "FeatureFlagsUI", targets: ["FeatureFlagsUI"]),
        .library(name: "FeatureFlagsFlagd", targets: ["FeatureFlagsFlagd"]),
        .library(name: "FeatureFlagsServices", targets: ["FeatureFlagsServices"]),
        .library(name: "FeatureFlagsSigning", targets: ["FeatureFlagsSigning"]),
        .library(name: "FeatureFlagsTesting", targets: ["FeatureFlagsTesting"]),
        .library(name: "FlagServer", targets: ["FlagServer"]),
        .executable(name: "flagctl", targets: ["flagctl"]),
        .executable(name: "flag-benchmarks", targets: ["flag-benchmarks"]),
    ],
    targets: [
        // The privacy manifest travels with the library into every app that links it.
        .target(name: "FeatureFlags", resources: [.copy("PrivacyInfo.xcprivacy")]),
        // What a screen shows: observable flags for SwiftUI and UIKit, the debug inspector, and the
        // testers' overrides it edits (`FlagOverrides`: a file, launch arguments for UI tests).
        .target(name: "FeatureFlagsUI", dependencies: ["FeatureFlags"]),
        // flagd rule files evaluated on the device: the `.flagd` endpoint and its evaluator.
        .target(name: "FeatureFlagsFlagd", dependencies: ["FeatureFlags"]),
        // Other flag services' formats: OFREP, LaunchDarkly's client-side API, Firebase Remote
        // Config's REST fetch, Unleash's frontend API.
        .target(name: "FeatureFlagsServices", dependencies: ["FeatureFlags"]),
        // Signed flags: Ed25519 (RFC 8032) and JWS (RFC 7515), the trusted keys the fetcher and
        // bundled defaults check.
        .target(name: "FeatureFlagsSigning", dependencies: ["FeatureFlags"]),
        .target(name: "FeatureFlagsTesting", dependencies: ["FeatureFlags"]),
        .target(name: "FlagServer", dependencies: ["FeatureFlags", "FeatureFlagsFlagd", "FeatureFlagsSigning"]),
        .target(name: "ChildProcesses", dependencies: ["FeatureFlags"]),
        .target(
            name: "FlagCtlCore",
            dependencies: ["ChildProcesses", "FeatureFlags", "FeatureFlagsUI", "FeatureFlagsFlagd", "FeatureFlagsServices", "FeatureFlagsSigning", "FlagServer"]),
        .executableTarget(name: "flagctl", dependencies: ["FlagCtlCore"]),
        // The performance budgets (Docs/Performance.md): `swift run -c release flag-benchmarks --check`.
        .executableTarget(
            name: "flag-benchmarks", dependencies: ["ChildProcesses", "FeatureFlags", "FeatureFlagsFlagd", "FeatureFlagsServices", "FeatureFlagsSigning", "FlagServer"]),
        // Child processes for tests: a fallback-file writer that the crash and two-process tests
        // kill and race, and the memory probe for oversized answers.
        .executableTarget(name: "flag-stress", dependencies: ["FeatureFlags", "FlagServer"]),
        // An example app's modules, each taking `any FeatureFlagClient` (see Docs/Testing.md).
        .target(name: "POSExample", dependencies: ["FeatureFlags", "FeatureFlagsUI"]),
        // Helpers shared by the test targets (temporary directories, loopback fixtures, timing).
        .target(name: "TestSupport", dependencies: ["FeatureFlags", "FlagServer"], path: "Tests/TestSupport"),
        // One test target per module.
        .testTarget(
            name: "FeatureFlagsTests",
            dependencies: [
                "FeatureFlags", "FeatureFlagsUI", "FeatureFlagsFlagd", "FeatureFlagsServices", "FeatureFlagsSigning", "FeatureFlagsTesting",
                "ChildProcesses", "FlagServer", "TestSupport",
            ],
            // Read from the source tree by #filePath (their generator is Python, kept beside them).
            exclude: ["LocalEvaluation/Fixtures", "Signing/Fixtures"]),
        .testTarget(name: "FlagServerTests", dependencies: ["FlagServer", "FeatureFlags", "TestSupport"]),
        .testTarget(
            name: "FlagCtlTests",
            dependencies: ["ChildProcesses", "FlagCtlCore", "FlagServer", "FeatureFlags", "FeatureFlagsFlagd", "FeatureFlagsServices", "FeatureFlagsSigning", "TestSupport"]),
        // The README's first app, compiled as written (`.ci/first-app` runs it as a newcomer would).
        .executableTarget(name: "FirstAppSnippet", dependencies: ["FeatureFlags"], path: "Tests/FirstAppSnippet"),
        // Every Swift snippet of README.md and Docs/ that is not itself a test, as a library so that
        // apple-sdk-check type-checks it for iOS, macOS and tvOS (its SwiftUI, BackgroundTasks and
        // App Group code included); the snippets that are tests live in DocSnippetTests.
        .target(
            name: "DocSnippets",
            dependencies: [
                "FeatureFlags", "FeatureFlagsUI", "FeatureFlagsFlagd", "FeatureFlagsServices", "FeatureFlagsSigning", "FeatureFlagsTesting",
                "FlagServer",
            ],
            path: "Tests/DocSnippets"),
        .testTarget(
            name: "DocSnippetTests", dependencies: ["DocSnippets", "FeatureFlags", "FeatureFlagsTesting", "FlagCtlCore", "FlagServer", "TestSupport"],
            resources: [.copy("Resources/flag-defaults.json")]),
        .testTarget(name: "POSExampleTests", dependencies: ["POSExample", "FeatureFlags", "FeatureFlagsTesting", "FlagServer", "TestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)

// The strictness the Apple server packages use, for every target: explicit `any`, members
// visible only through the file's own imports, imports internal unless declared `public`.
let strictness: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]
for target in package.targets {
    target.swiftSettings = (target.swiftSettings ?? []) + strictness
}
