public import FeatureFlags
public import Foundation

/// A required or recommended app update published as a flag, `{"version": "1.2.3.500", "download": "https://…"}`;
/// it applies when its version is newer than the app's (see ``AppVersion``).
public struct ApplicationUpdate: Sendable, Hashable, FlagValueConvertible {
    /// The version the update brings.
    public let version: AppVersion
    /// Where to get it (typically the App Store page).
    public var download: URL { downloadReference.url }
    /// ``download``, held by reference (`Support/FixedLayout.swift`).
    private let downloadReference: URLReference

    /// An update.
    public init(version: AppVersion, download: URL) {
        self.version = version
        self.downloadReference = URLReference(download)
    }

    /// Whether the update is newer than `appVersion`.
    public func isApplicable(to appVersion: AppVersion) -> Bool { version > appVersion }

    /// Whether the update is newer than the running app; false when its version cannot be read.
    public var isApplicable: Bool {
        guard let current = AppVersion.current() else { return false }
        return isApplicable(to: current)
    }

    /// From `{"version": "X.Y.Z[.a]", "download": "<absolute URL>"}` or text holding it; nil (TYPE_MISMATCH) otherwise.
    public init?(flagValue: FlagValue) {
        guard case .object(let members) = flagValue.unwrappingText,
            let versionText = members["version"]?.stringValue, let version = AppVersion(versionText),
            let downloadText = members["download"]?.stringValue, let download = URL(string: downloadText),
            let scheme = download.scheme, !scheme.isEmpty, downloadText.count > scheme.count + 1
        else { return nil }
        self.init(version: version, download: download)
    }

    /// `{"version": …, "download": …}`.
    public var flagValue: FlagValue {
        .object(["version": .string(version.description), "download": .string(download.absoluteString)])
    }

    /// Codable as the same JSON object.
    public init(from decoder: any Decoder) throws {
        let value = try FlagValue(from: decoder)
        guard let update = ApplicationUpdate(flagValue: value) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "not an application update"))
        }
        self = update
    }

    /// Encodes the JSON object.
    public func encode(to encoder: any Encoder) throws { try flagValue.encode(to: encoder) }
}

extension FlagKey where Value == ApplicationUpdate? {
    /// The flag `ios_required_update`: an update the app must install before it goes on.
    public static var requiredUpdate: FlagKey { .update(named: "ios_required_update") }
    /// The flag `ios_recommended_update`: an update the app suggests.
    public static var recommendedUpdate: FlagKey { .update(named: "ios_recommended_update") }

    /// An update key under another name (e.g. `android_required_update`), default nil; `null` or `""` means no update.
    public static func update(named name: String) -> FlagKey { FlagKey(optional: name) }
}

extension FeatureFlagClient {
    /// The required update if it applies to `appVersion`, else the recommended one if it does, else nil (always under a kill).
    public func updateAdvice(
        for appVersion: AppVersion, required: FlagKey<ApplicationUpdate?> = .requiredUpdate,
        recommended: FlagKey<ApplicationUpdate?> = .recommendedUpdate
    ) -> (update: ApplicationUpdate, required: Bool)? {
        if let update = value(required), update.isApplicable(to: appVersion) { return (update, true) }
        if let update = value(recommended), update.isApplicable(to: appVersion) { return (update, false) }
        return nil
    }
}
