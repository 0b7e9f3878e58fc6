import FeatureFlags
import FeatureFlagsSigning
import FlagServer
import Foundation
import Testing
import TestSupport

@testable import FlagCtlCore

/// `flagctl keygen`, `sign`, `verify`, and `eval --trust` against a server that signs: an
/// operator's whole path to signed flags, with every refusal.
@Suite("flagctl signing")
struct SigningCommandTests {
    @Test func keygenSignVerifyRoundTripAndRefusals() async throws {
        let dir = TempDir()
        let name = dir.url("ops-2026").path
        let (made, madeOut) = await run(["keygen", name])
        #expect(made == 0 && madeOut.out.first?.hasPrefix("private key: \(name).pem") == true)
        let permissions = try FileManager.default.attributesOfItem(atPath: name + ".pem")[.posixPermissions] as? Int
        #expect(permissions == 0o600, "the private key is its owner's alone")
        let (again, againOut) = await run(["keygen", name])
        #expect(again == 73 && againOut.err.first == "flagctl keygen: \(name).pem exists already; nothing written")

        let document = dir.url("flags.json")
        try Data(#"{"flags": {"new_checkout": true}}"#.utf8).write(to: document)
        let signed = dir.url("flags.jws").path
        #expect(await run(["sign", document.path, "--key", name + ".pem", "--kid", "ops-2026", "--expires-in", "3600", "--out", signed]).0 == 0)
        let (verified, verifiedOut) = await run(["verify", signed, "--key", name + ".pub.pem", "--kid", "ops-2026", "--print"])
        #expect(verified == 0)
        #expect(verifiedOut.out == [#"{"flags": {"new_checkout": true}}"#])
        #expect(verifiedOut.err.first?.hasPrefix("verified · key ops-2026 · signed ") == true && verifiedOut.err.first?.contains(" · expires ") == true)
        // Times print as RFC 3339 in UTC, to the second: the expiry an hour after the signing.
        let fields = (verifiedOut.err.first ?? "").components(separatedBy: " · ")
        let signedAt = fields.first { $0.hasPrefix("signed ") }.flatMap { ISO8601.date(String($0.dropFirst("signed ".count))) }
        let expiresAt = fields.first { $0.hasPrefix("expires ") }.flatMap { ISO8601.date(String($0.dropFirst("expires ".count))) }
        #expect(signedAt != nil && expiresAt.map { $0.timeIntervalSince(signedAt!) } == 3600, "\(fields)")
        #expect(fields.allSatisfy { !$0.hasPrefix("signed ") || $0.hasSuffix("Z") })

        // Another key, another kid, a changed document, an unsigned one: refused, with why.
        #expect(await run(["keygen", dir.url("other").path]).0 == 0)
        let (wrongKey, wrongKeyOut) = await run(["verify", signed, "--key", dir.url("other.pub.pem").path])
        #expect(wrongKey == 1 && wrongKeyOut.err.first == #"flagctl verify: bad signature (key "ops-2026")"#)
        let (wrongID, wrongIDOut) = await run(["verify", signed, "--key", name + ".pub.pem", "--kid", "ops-2025"])
        #expect(wrongID == 1 && wrongIDOut.err.first == #"flagctl verify: unknown key id "ops-2026""#)
        var parts = try String(contentsOfFile: signed, encoding: .utf8).trimmingCharacters(in: .newlines).split(separator: ".").map(String.init)
        parts[1] = Base64URL.encode(Array(#"{"flags": {"new_checkout": false}}"#.utf8))
        try Data(parts.joined(separator: ".").utf8).write(to: URL(fileURLWithPath: signed))
        #expect(await run(["verify", signed, "--key", name + ".pub.pem"]).0 == 1)
        #expect(await run(["verify", document.path, "--key", name + ".pub.pem"]).0 == 1)
        // A public key is not a signing key; a missing --key is a usage error.
        #expect(await run(["sign", document.path, "--key", name + ".pub.pem"]).0 == 66)
        #expect(await run(["sign", document.path]).0 == 64)
        #expect(await run(["verify", signed, "--key", dir.url("missing.pem").path]).0 == 66)
    }

    /// Two key pairs made with `flagctl keygen` in `dir` (`ops`, `stranger`) and a server that
    /// signs every answer with `ops`'s (key id `ops`).
    static func serverSigningAsOps(keysIn dir: TempDir) async throws -> FlagServer {
        #expect(await run(["keygen", dir.url("ops").path]).0 == 0)
        #expect(await run(["keygen", dir.url("stranger").path]).0 == 0)
        let server = try FlagServer(document: .seedExample)
        try server.signAnswers(privateKeyPEM: String(contentsOf: dir.url("ops.pem"), encoding: .utf8), keyID: "ops")
        return server
    }

    @Test func evalTrustsOnlyTheKeyItIsGiven() async throws {
        let dir = TempDir()
        let server = try await Self.serverSigningAsOps(keysIn: dir)
        defer { server.stop() }
        let common = ["eval", "--endpoint", server.flagsURL.absoluteString, "--context", "targetingKey=user-1"] + generousTimeout
        let (trusted, trustedOut) = await run(common + ["--trust", dir.url("ops.pub.pem").path])
        #expect(trusted == 0 && trustedOut.out.first?.hasPrefix("status READY · network") == true, "\(trustedOut.out.prefix(2))")
        let (_, refusedOut) = await run(common + ["--trust", dir.url("stranger.pub.pem").path])
        #expect(refusedOut.out.first?.contains(#"signature rejected: unknown key id "ops""#) == true, "\(refusedOut.out.prefix(2))")
        // The same key under the id the server names.
        let (renamed, renamedOut) = await run(common + ["--trust", "ops=" + dir.url("stranger.pub.pem").path])
        #expect(renamedOut.out.first?.contains(#"signature rejected: bad signature (key "ops")"#) == true, "\(renamed) \(renamedOut.out.prefix(2))")
        #expect(await run(common + ["--trust", dir.url("missing.pub.pem").path]).0 == 64)
    }

    @Test func readTrustsOnlyTheKeyItIsGivenAndLeavesTheFileAsItIs() async throws {
        let dir = TempDir()
        let server = try await Self.serverSigningAsOps(keysIn: dir)
        defer { server.stop() }
        let state = dir.url("state").path
        let fetched = await run(
            ["eval", "--endpoint", server.flagsURL.absoluteString, "--context", "targetingKey=user-1", "--state", state,
             "--trust", dir.url("ops.pub.pem").path] + generousTimeout)
        #expect(fetched.0 == 0)
        let file = dir.url("state/flags.lkg")
        let before = try Data(contentsOf: file)

        let (trusted, trustedOut) = await run(["read", "--state", state, "--trust", dir.url("ops.pub.pem").path])
        #expect(trusted == 0 && trustedOut.err.isEmpty, "\(trustedOut.err)")
        #expect(trustedOut.out.contains { $0.hasPrefix("new_checkout") && $0.contains("fallback") }, "\(trustedOut.out)")
        let (refused, refusedOut) = await run(["read", "--state", state, "--trust", "ops=" + dir.url("stranger.pub.pem").path])
        #expect(refused == 66, "nothing in the file verifies")
        #expect(
            refusedOut.err == [#"flagctl read: not served: the stored snapshot for this context is not what a trusted key signed: its signature does not verify: bad signature (key "ops")"#],
            "\(refusedOut.err)")
        #expect(try Data(contentsOf: file) == before, "read never writes the app's file")
        // Without --trust the file is shown as the app wrote it; options that cannot apply are usage errors.
        #expect(await run(["read", "--state", state]).0 == 0)
        #expect(await run(["read", "--state", state, "--provider", "nope"]).0 == 64)
        #expect(await run(["read", "--state", state, "--bucketing", "cbor"]).0 == 64)
        #expect(await run(["read", "--state", state, "--trust", dir.url("missing.pub.pem").path]).0 == 64)
    }

    @Test func signingOptionsThatCannotWorkAreUsageErrors() async throws {
        let dir = TempDir()
        #expect(await run(["keygen", dir.url("ops").path]).0 == 0)
        let document = dir.url("flags.json")
        try Data(#"{"flags": {"a": true}}"#.utf8).write(to: document)
        for bad in ["-5", "0", "soon", "1e300", "inf", "nan"] {
            let (status, output) = await run(["sign", document.path, "--key", dir.url("ops.pem").path, "--expires-in", bad])
            #expect(status == 64, "--expires-in \(bad)")
            #expect(
                output.err.first == "flagctl sign: --expires-in takes a positive number of seconds (at most 2^32, about 136 years), not '\(bad)'",
                "\(output.err)")
        }
        #expect(!FileManager.default.fileExists(atPath: dir.url("flags.jws").path), "nothing written")
        // serve --sign-with: a file that does not exist, and a public key (no private key in it).
        let missing = dir.url("missing.pem").path
        let (unread, unreadOut) = await run(["serve", Self.examples, "--port", "0", "--sign-with", missing])
        #expect(unread == 64 && unreadOut.err.first == "flagctl serve: --sign-with: cannot read \(missing)", "\(unreadOut.err)")
        let publicKey = dir.url("ops.pub.pem").path
        let (wrong, wrongOut) = await run(["serve", Self.examples, "--port", "0", "--sign-with", publicKey])
        #expect(wrong == 64, "\(wrongOut.err)")
        #expect(wrongOut.err.first == "flagctl serve: --sign-with: \(publicKey) holds no Ed25519 private key (a PRIVATE KEY PEM block)")
    }

    @Test func serveCanSignAnswersAsOneDocumentThatExpires() async throws {
        let dir = TempDir()
        #expect(await run(["keygen", dir.url("ops").path]).0 == 0)
        let served = try await ServeRun.start(["--sign-with", dir.url("ops.pem").path, "--expires-in", "3600"])
        let said = try #require(served.captured.out.first)
        #expect(said.hasPrefix("signing every answer as a JWS (Ed25519) with key id ops, signed now and current until "), "\(said)")
        #expect(said.hasSuffix("Z (apps read the values STALE from then)"), "\(said)")
        let banner = try #require(served.captured.out.first { $0.hasPrefix("serving ") })
        let base = try #require(banner.split(separator: " ").first { $0.hasPrefix("http://") }.map(String.init))
        var configuration = FlagFetcher.Configuration.loopback
        configuration.trustedKeys = ["ops": try String(contentsOf: dir.url("ops.pub.pem"), encoding: .utf8)]
        let client = FlagFetcher(endpoint: .json(post: URL(string: base + "/flags")!), configuration: configuration)
        defer { client.shutdown() }
        // Two answers: one signing time, one expiry an hour after it — a document signed once.
        var stamps: [SignatureStamp] = []
        for context in [auraPersonal, auraBusiness] {
            guard case .fetched(let snapshot, _, _) = await client.fetch(context), let stamp = snapshot.signature else {
                Issue.record("no signed answer for \(context)")
                return
            }
            stamps.append(stamp)
        }
        #expect(stamps.count == 2 && stamps[0].issuedAt == stamps[1].issuedAt && stamps[0].expiresAt == stamps[1].expiresAt)
        #expect(stamps.first.flatMap { s in s.issuedAt.flatMap { i in s.expiresAt.map { $0.timeIntervalSince(i) } } } == 3600)
        #expect(await served.stop() == 0)
    }

    @Test func serveRefusesAnExpiryItCannotUse() async throws {
        let (alone, aloneOut) = await run(["serve", Self.examples, "--port", "0", "--expires-in", "60"])
        #expect(alone == 64 && aloneOut.err.first == "flagctl serve: --expires-in needs --sign-with: only signed answers carry an expiry", "\(aloneOut.err)")
        let dir = TempDir()
        #expect(await run(["keygen", dir.url("ops").path]).0 == 0)
        for bad in ["0", "-1", "soon", "1e300"] {
            let (status, output) = await run(["serve", Self.examples, "--port", "0", "--sign-with", dir.url("ops.pem").path, "--expires-in", bad])
            #expect(status == 64, "--expires-in \(bad)")
            #expect(output.err.first?.hasPrefix("flagctl serve: --expires-in takes a positive number of seconds") == true, "\(output.err)")
        }
    }

    /// The example document, from the package's root (where `swift test` runs).
    static let examples = "Docs/examples/flags.json"
}
