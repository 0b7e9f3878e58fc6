public import Foundation
public import FeatureFlags

extension FlagEndpoint {
    /// A flagd flag-definition file (`https://flagd.dev/schema/v0/flags.json`) from any URL —
    /// a CDN, an object store, `flagctl serve` — evaluated on the device: one conditional `GET`
    /// serves every context, and the rules are kept, so an identify, a relaunch or an offline
    /// start evaluates them again without asking. `headers` carry credentials for a private
    /// bucket; `bucketing` picks how `fractional` splits (flagd's current high-precision
    /// bucketing by default). See Docs/Providers.md, "Local evaluation".
    public static func flagd(url: URL, headers: [String: String] = [:], bucketing: FractionalBucketing = .highPrecision) -> FlagEndpoint {
        FlagEndpoint(FlagdEndpoint(url: url, headers: headers, bucketing: bucketing))
    }
}
