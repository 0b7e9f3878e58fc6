public import FeatureFlags
public import Foundation

extension TrustedKeys: DocumentVerifier {
    /// `bytes` verified as a JWS against these keys.
    package func verify(_ bytes: [UInt8]) -> Result<VerifiedDocument, SignatureFailure> { JWS.verify(bytes, trusting: self) }
}

extension SignatureTrust {
    /// Trust in the Ed25519 keys of `text` (key id: PEM or base64url).
    static func ed25519(_ text: [String: String]) -> SignatureTrust {
        do throws(FlagError) {
            return SignatureTrust(keys: text, verifier: .ready(try TrustedKeys(text)))
        } catch {
            return SignatureTrust(keys: text, verifier: .unusable(error))
        }
    }
}

extension FlagFetcher.Configuration {
    /// A configuration whose answers must be signed by one of `trustedKeys`.
    /// - Parameter trustedKeys: see ``trustedKeys``.
    public init(
        budget: Duration = .seconds(2), maxResponseBytes: Int = 1 << 20, allowInsecureHTTP: Bool = false,
        headers: [String: String] = [:], trustedKeys: [String: String]
    ) {
        self.init(budget: budget, maxResponseBytes: maxResponseBytes, allowInsecureHTTP: allowInsecureHTTP, headers: headers)
        self.trustedKeys = trustedKeys
    }

    /// The Ed25519 public keys trusted to sign the flags, by key id (the JWS `kid`): a
    /// `PUBLIC KEY` PEM block as `openssl pkey -pubout` writes it, or the key's 32 bytes in
    /// base64url. When any is set, every answer must be a JWS (RFC 7515, Ed25519) that one
    /// of them verifies, before it is decoded: an unsigned answer, an unknown key id or a
    /// bad signature fails the fetch (``FetchError/Kind/signatureRejected``), and what the
    /// app holds stays; a stored snapshot is served at launch only if its signature verifies
    /// again. Several keys at once for rotation. Keys that are not Ed25519 public keys fail
    /// every fetch, naming the first. Empty (the default): answers are not checked. See
    /// Docs/Security.md, "Signed flags".
    public var trustedKeys: [String: String] {
        get { signatureTrust?.keys ?? [:] }
        set { signatureTrust = newValue.isEmpty ? nil : .ed25519(newValue) }
    }
}

extension BundledDefaults {
    /// Defaults from a signed file: the same JSON as ``BundledDefaults/jsonFile(_:)``, wrapped
    /// as a JWS (RFC 7515, Ed25519) — what `flagctl sign` writes — that one of `trustedKeys`
    /// (by key id, as ``FlagFetcher/Configuration/trustedKeys``) must verify. A file that does
    /// not verify yields no defaults and a `PARSE_ERROR` error event saying why, like an
    /// unreadable one.
    public static func signedJSONFile(_ url: URL, trustedKeys: [String: String]) -> BundledDefaults {
        .signedJSONFile(url, trust: .ed25519(trustedKeys))
    }
}

extension FallbackClient {
    /// A fallback client that serves from `store` only what one of `trustedKeys` signed (by key
    /// id, as ``FlagFetcher/Configuration/trustedKeys``), read through the app's `endpoints` as
    /// its provider reads the file offline; anything else is not served (bundled and code
    /// defaults instead) and a `fallback_tampered` event says why. The other parameters are
    /// those of `FallbackClient(store:…)`.
    public convenience init(
        store: LastKnownGoodStore, context: EvaluationContext? = nil, bundledDefaults: BundledDefaults = .none,
        killSwitchKey: String = "kill_switch", overrides: (any FlagOverrideSource)? = nil, exposures: Bool = false,
        eventContext: EventContextDetail = .fingerprint, endpoints: [FlagEndpoint], trustedKeys: [String: String],
        merge: ContextMerge = ContextMerge(), now: @escaping @Sendable () -> Date = coarseWallClockNow
    ) {
        self.init(
            store: store, context: context, bundledDefaults: bundledDefaults, killSwitchKey: killSwitchKey, overrides: overrides,
            exposures: exposures, eventContext: eventContext, endpoints: endpoints,
            trust: trustedKeys.isEmpty ? nil : .ed25519(trustedKeys), merge: merge, now: now)
    }

    /// The same, loading the store at `fileURL`.
    public convenience init(
        fileURL: URL = LastKnownGoodStore.defaultFileURL(), context: EvaluationContext? = nil,
        bundledDefaults: BundledDefaults = .none, killSwitchKey: String = "kill_switch", overrides: (any FlagOverrideSource)? = nil,
        endpoints: [FlagEndpoint], trustedKeys: [String: String], merge: ContextMerge = ContextMerge(),
        now: @escaping @Sendable () -> Date = coarseWallClockNow
    ) {
        self.init(
            store: LastKnownGoodStore(fileURL: fileURL), context: context, bundledDefaults: bundledDefaults,
            killSwitchKey: killSwitchKey, overrides: overrides, endpoints: endpoints, trustedKeys: trustedKeys, merge: merge,
            now: now)
    }
}
