import FeatureFlags
import FeatureFlagsSigning
import Foundation

/// The public key shipped in the app bundle, as its PEM text.
func bundledPEM(_ name: String) -> String {
    (Bundle.main.url(forResource: name, withExtension: nil)).flatMap { try? String(contentsOf: $0, encoding: .utf8) } ?? ""
}

func securitySignedFlags(cdnURL: String) {
    // snippet: Security signed flags
    let fetch = FlagFetcher.Configuration(trustedKeys: [
        "ops-2026": bundledPEM("ops-2026.pub.pem"),   // the PUBLIC KEY block, or the key's 32 bytes in base64url
    ])
    let flags = FeatureFlagProvider.start(context: user, endpoint: .json(urlTemplate: cdnURL), fetch: fetch)
    // end snippet
    flags.shutdown()
}
