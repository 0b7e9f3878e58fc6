import ChildProcesses
import Foundation
import Testing
import TestSupport

@testable import FeatureFlags
@testable import FeatureFlagsSigning

// Seconds of curve arithmetic in a debug build under ThreadSanitizer: kept apart from the
// wall-clock tests (WallClockSensitive runs its suites one after the other), whose deadlines
// this CPU would otherwise steal.
extension WallClockSensitive {
/// The signed envelope (JWS, RFC 7515, EdDSA of RFC 8037): what verifies, every refusal, the
/// key formats operators hold, and interoperability with OpenSSL both ways.
@Suite("JWS envelopes")
struct JWSTests {
    static let seed = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 11) }
    static let otherSeed = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 17 &+ 5) }
    static let document = Array(#"{"flags": {"new_checkout": true, "kill_switch": false}}"#.utf8)
    static func keys(_ pairs: [String: [UInt8]]) throws -> TrustedKeys {
        try TrustedKeys(pairs.mapValues { SigningKeys.publicKeyPEM(Ed25519.publicKey(seed: $0)) })
    }

    @Test func aCompactDocumentVerifiesAndGivesTheDocumentsBytes() throws {
        let signed = JWS.sign(Self.document, seed: Self.seed, keyID: "ops-2026", issuedAt: Date(timeIntervalSince1970: 1_790_000_000))
        let result = JWS.verify(signed, trusting: try Self.keys(["ops-2026": Self.seed]))
        let verified = try result.get()
        #expect(verified.payload == Self.document && verified.keyID == "ops-2026")
        #expect(verified.issuedAt == Date(timeIntervalSince1970: 1_790_000_000) && verified.expiresAt == nil)
        // Surrounding whitespace (a trailing newline from a file) is allowed.
        #expect((try? JWS.verify(signed + [0x0a], trusting: try Self.keys(["ops-2026": Self.seed])).get()) != nil)
    }

    @Test func anExpiryBeyondAnyIntIsWrittenNotTrapped() throws {
        let never = Date(timeIntervalSince1970: 1e300)
        let signed = JWS.sign(Self.document, seed: Self.seed, keyID: "ops-2026", expiresAt: never)
        let verified = try JWS.verify(signed, trusting: try Self.keys(["ops-2026": Self.seed])).get()
        #expect(verified.expiresAt == Date(timeIntervalSince1970: Double(Int.max)))
    }

    @Test func rotationTrustsSeveralKeysAndAKidlessSignatureTriesThemAll() async throws {
        // Off the global executor's threads: loopback tests beside it need them.
        try await blocking {
            let keys = try Self.keys(["old": Self.otherSeed, "new": Self.seed])
            #expect((try? JWS.verify(JWS.sign(Self.document, seed: Self.otherSeed, keyID: "old"), trusting: keys).get())?.keyID == "old")
            #expect((try? JWS.verify(JWS.sign(Self.document, seed: Self.seed, keyID: nil), trusting: keys).get())?.keyID == "new")
        }
    }

    @Test func theJSONSerialisationsVerify() async throws {
        // Off the global executor's threads: loopback tests beside it need them.
        try await blocking {
            let compact = String(decoding: JWS.sign(Self.document, seed: Self.seed, keyID: nil), as: UTF8.self).split(separator: ".")
            let keys = try Self.keys(["k": Self.seed])
            let flattened = #"{"protected":"\#(compact[0])","header":{"kid":"k"},"payload":"\#(compact[1])","signature":"\#(compact[2])"}"#
            #expect((try? JWS.verify(Array(flattened.utf8), trusting: keys).get())?.payload == Self.document)
            let forged = JWS.sign(Self.document, seed: Self.otherSeed, keyID: nil).split(separator: UInt8(ascii: "."))
            let general = #"{"payload":"\#(compact[1])","signatures":[{"protected":"\#(String(decoding: forged[0], as: UTF8.self))","signature":"\#(String(decoding: forged[2], as: UTF8.self))"},{"protected":"\#(compact[0])","signature":"\#(compact[2])"}]}"#
            #expect((try? JWS.verify(Array(general.utf8), trusting: keys).get())?.payload == Self.document, "one trusted signature suffices")
            // The algorithm must be signed: in the unprotected header only, it is not read.
            let unsigned = Self.compact(header: #"{"kid":"k"}"#).split(separator: UInt8(ascii: ".")).map { String(decoding: $0, as: UTF8.self) }
            let outside = #"{"protected":"\#(unsigned[0])","header":{"alg":"EdDSA"},"payload":"\#(unsigned[1])","signature":"\#(unsigned[2])"}"#
            #expect(Self.failure(Array(outside.utf8), keys) == #"malformed JWS: no "alg""#)
        }
    }

    static func failure(_ bytes: [UInt8], _ keys: TrustedKeys) -> String {
        switch JWS.verify(bytes, trusting: keys) {
        case .success: return "verified"
        case .failure(let failure): return failure.description
        }
    }

    static func compact(header: String, payload: [UInt8] = document, seed: [UInt8] = seed) -> [UInt8] {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(payload)
        return Array((input + "." + Base64URL.encode(Ed25519.sign(Array(input.utf8), seed: seed))).utf8)
    }

    @Test func bothNamesOfEd25519Verify() throws {
        // RFC 9864's fully specified "Ed25519" (what we write) and RFC 8037's "EdDSA" (which it
        // deprecates, still what most JOSE libraries write) name the same signature over an
        // Ed25519 key; "Ed448", the other curve, is refused.
        let keys = try Self.keys(["k": Self.seed])
        let written = JWS.sign(Self.document, seed: Self.seed, keyID: "k")
        let header = try FlagJSON.parse(Base64URL.decode(written.split(separator: UInt8(ascii: ".")).first ?? []) ?? [])
        #expect(header.objectValue?["alg"] == "Ed25519")
        #expect(Self.failure(Self.compact(header: #"{"alg":"Ed25519","kid":"k"}"#), keys) == "verified")
        #expect(Self.failure(Self.compact(header: #"{"alg":"EdDSA","kid":"k"}"#), keys) == "verified")
        #expect(Self.failure(Self.compact(header: #"{"alg":"Ed448","kid":"k"}"#), keys).hasPrefix(#"unsupported algorithm "Ed448""#))
        #expect(Self.failure(Self.compact(header: #"{"alg":"ed25519","kid":"k"}"#), keys).hasPrefix("unsupported algorithm"), "names are case-sensitive")
    }

    @Test func everyRefusalSaysWhy() async throws {
        // Off the global executor's threads: loopback tests beside it need them.
        try await blocking {
            let keys = try Self.keys(["k": Self.seed])
            #expect(Self.failure(Self.document, keys).hasPrefix("not a signed document (JWS)"))
            #expect(Self.failure([], keys) == "an empty answer is not a signed document")
            #expect(Self.failure(JWS.sign(Self.document, seed: Self.otherSeed, keyID: "k"), keys) == #"bad signature (key "k")"#)
            #expect(Self.failure(JWS.sign(Self.document, seed: Self.otherSeed, keyID: nil), keys) == "bad signature (no trusted key verifies it)")
            #expect(Self.failure(JWS.sign(Self.document, seed: Self.seed, keyID: "stranger"), keys) == #"unknown key id "stranger""#)
            #expect(Self.failure(Self.compact(header: #"{"alg":"none"}"#), keys) == #"unsupported algorithm "none" (only Ed25519 is accepted: "Ed25519" or "EdDSA")"#)
            #expect(Self.failure(Self.compact(header: #"{"alg":"HS256"}"#), keys).hasPrefix("unsupported algorithm"))
            #expect(Self.failure(Self.compact(header: #"{"alg":"EdDSA","crit":["b64"],"b64":false}"#), keys) == #"unsupported critical header parameters ("crit")"#)
            #expect(Self.failure(Self.compact(header: #"{"alg":"EdDSA","kid":7}"#), keys) == #"malformed JWS: "kid" is not a string"#)
            #expect(Self.failure(Self.compact(header: #"{"alg":"EdDSA","exp":"soon"}"#), keys) == #"malformed JWS: "exp" is not a number of seconds"#)
            #expect(Self.failure(Self.compact(header: #"["EdDSA"]"#), keys) == "malformed JWS: the protected header is not a JSON object")
            #expect(Self.failure(Array("a.b+c.d".utf8), keys) == "malformed JWS: a part is not base64url")
            // The payload changed after signing: the signature covers it.
            var parts = JWS.sign(Self.document, seed: Self.seed, keyID: "k").split(separator: UInt8(ascii: ".")).map(Array.init)
            parts[1] = Array(Base64URL.encode(Array(#"{"flags": {"kill_switch": true}}"#.utf8)).utf8)
            #expect(Self.failure(Array(parts.joined(separator: [UInt8(ascii: ".")])), keys) == #"bad signature (key "k")"#)
        }
    }

    @Test func keysAreReadInTheFormsOperatorsHold() throws {
        let key = Ed25519.publicKey(seed: Self.seed)
        #expect(SigningKeys.publicKey(SigningKeys.publicKeyPEM(key)) == key)
        #expect(SigningKeys.publicKey(Base64URL.encode(key)) == key)
        #expect(SigningKeys.privateKey(SigningKeys.privateKeyPEM(Self.seed)) == Self.seed)
        #expect(SigningKeys.publicKey("not a key") == nil && SigningKeys.privateKey(SigningKeys.publicKeyPEM(key)) == nil)
        #expect(throws: FlagError.self) { try TrustedKeys(["bad": "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"]) }
    }

    @Test func base64URLIsStrict() {
        for length in 0..<20 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 250) }
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
        }
        #expect(Base64URL.encode(Array("hi?>".utf8)) == "aGk_Pg")
        #expect(Base64URL.decode("aGk_Pg==") == nil, "no padding")
        #expect(Base64URL.decode("aGk/Pg") == nil, "the URL alphabet only")
        #expect(Base64URL.decode("aGk_Ph") == nil, "unused bits must be zero")
        #expect(Base64URL.decode("a") == nil)
    }

    @Test func signedBundledDefaultsAreReadOnlyWhenTheyVerify() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("jws-defaults-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let defaults = dir.appendingPathComponent("defaults.jws")
        let keys = ["ops": SigningKeys.publicKeyPEM(Ed25519.publicKey(seed: Self.seed))]
        try Data(JWS.sign(Array(#"{"flags": {"new_checkout": true}}"#.utf8), seed: Self.seed, keyID: "ops")).write(to: defaults)
        let signed = FallbackClient(fileURL: dir.appendingPathComponent("f"), bundledDefaults: .signedJSONFile(defaults, trustedKeys: keys))
        defer { signed.shutdown() }
        #expect(signed.value(FlagKey("new_checkout", default: false)) == true)
        #expect(signed.details(FlagKey("new_checkout", default: false)).source == .bundledDefaults)

        try Data(JWS.sign(Array(#"{"flags": {"new_checkout": true}}"#.utf8), seed: Self.otherSeed, keyID: "ops")).write(to: defaults)
        let forged = FallbackClient(fileURL: dir.appendingPathComponent("g"), bundledDefaults: .signedJSONFile(defaults, trustedKeys: keys))
        defer { forged.shutdown() }
        #expect(forged.value(FlagKey("new_checkout", default: false)) == false)
        let message = #"bundled defaults defaults.jws: signature rejected: bad signature (key "ops")"#
        #expect(forged.recentEvents.contains(.error(.parseError, message: message)), "\(forged.recentEvents)")
    }

    /// Signed bundled defaults whose trusted key does not read: no defaults, and an error event
    /// naming the key (the file is not even parsed).
    @Test func signedBundledDefaultsWithAnUnusableKeyAreNotServed() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("jws-defaults-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let defaults = dir.appendingPathComponent("defaults.jws")
        try Data(JWS.sign(Array(#"{"flags": {"new_checkout": true}}"#.utf8), seed: Self.seed, keyID: "ops")).write(to: defaults)
        let client = FallbackClient(
            fileURL: dir.appendingPathComponent("f"), bundledDefaults: .signedJSONFile(defaults, trustedKeys: ["ops": "not a key"]))
        defer { client.shutdown() }
        #expect(client.value(FlagKey("new_checkout", default: false)) == false)
        let messages = client.recentEvents.compactMap(\.message)
        #expect(messages.contains { $0.hasPrefix("bundled defaults defaults.jws: trusted key \"ops\" is not an Ed25519 public key") }, "\(messages)")
    }

    // MARK: OpenSSL, both ways

    /// Runs `openssl` with `arguments`; nil when it is missing or lacks Ed25519.
    static func openssl(_ arguments: [String]) -> Int32? {
        guard let process = try? ChildProcess(URL(fileURLWithPath: "/usr/bin/env"), ["openssl"] + arguments, output: .discard, errors: .discard)
        else { return nil }
        return process.waitUntilExit().status
    }

    @Test func openSSLsSignaturesVerifyAndOursVerifyWithOpenSSL() async throws {
        // Off the global executor's threads: loopback tests beside it need them.
        try await blocking {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("jws-openssl-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: dir) }
            let keyFile = dir.appendingPathComponent("key.pem").path
            guard Self.openssl(["genpkey", "-algorithm", "ed25519", "-out", keyFile]) == 0 else {
                print("skipped: no openssl with Ed25519 on this machine")
                return
            }
            let publicFile = dir.appendingPathComponent("public.pem").path
            #expect(Self.openssl(["pkey", "-in", keyFile, "-pubout", "-out", publicFile]) == 0)
            let seed = try #require(SigningKeys.privateKey(String(contentsOfFile: keyFile, encoding: .utf8)))
            let publicKey = try #require(SigningKeys.publicKey(String(contentsOfFile: publicFile, encoding: .utf8)))
            #expect(Ed25519.publicKey(seed: seed) == publicKey, "OpenSSL's key files read as the same key pair")

            // OpenSSL signs the JWS signing input; ours verifies the envelope.
            let input = Base64URL.encode(Array(#"{"alg":"EdDSA","kid":"ops"}"#.utf8)) + "." + Base64URL.encode(Self.document)
            let inputFile = dir.appendingPathComponent("input").path
            let signatureFile = dir.appendingPathComponent("signature").path
            try Data(input.utf8).write(to: URL(fileURLWithPath: inputFile))
            #expect(Self.openssl(["pkeyutl", "-sign", "-rawin", "-inkey", keyFile, "-in", inputFile, "-out", signatureFile]) == 0)
            let signature = try [UInt8](Data(contentsOf: URL(fileURLWithPath: signatureFile)))
            let envelope = Array((input + "." + Base64URL.encode(signature)).utf8)
            let trusted = try TrustedKeys(["ops": String(contentsOfFile: publicFile, encoding: .utf8)])
            #expect((try? JWS.verify(envelope, trusting: trusted).get())?.payload == Self.document)

            // Ours signs; OpenSSL verifies the same signing input.
            let ours = JWS.sign(Self.document, seed: seed, keyID: "ops").split(separator: UInt8(ascii: "."))
            try Data(ours[0] + [UInt8(ascii: ".")] + ours[1]).write(to: URL(fileURLWithPath: inputFile))
            try Data(try #require(Base64URL.decode(Array(ours[2])))).write(to: URL(fileURLWithPath: signatureFile))
            #expect(Self.openssl(["pkeyutl", "-verify", "-rawin", "-pubin", "-inkey", publicFile, "-in", inputFile, "-sigfile", signatureFile]) == 0)
            // And refuses a changed input.
            try Data("x".utf8).write(to: URL(fileURLWithPath: inputFile))
            #expect(Self.openssl(["pkeyutl", "-verify", "-rawin", "-pubin", "-inkey", publicFile, "-in", inputFile, "-sigfile", signatureFile]) != 0)
        }
    }
}
}
