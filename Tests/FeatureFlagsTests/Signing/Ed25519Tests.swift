import Foundation
import Testing
import TestSupport

@testable import FeatureFlags
@testable import FeatureFlagsSigning

// Seconds of curve arithmetic in a debug build under ThreadSanitizer: kept apart from the
// wall-clock tests (WallClockSensitive runs its suites one after the other), whose deadlines
// this CPU would otherwise steal.
extension WallClockSensitive {
/// Ed25519 verification (RFC 8032) and the SHA-512 inside it, against published vectors:
/// every case of Project Wycheproof's Ed25519 file gives its expected result — valid
/// signatures verify, and every invalid one (S ≥ L, non-canonical R, truncated or padded
/// signatures, edge-case points) is refused. The curve arithmetic runs on threads of its own
/// (`blocking`): seconds of CPU in a debug build under ThreadSanitizer must not hold Swift's
/// cooperative threads, which other suites' deadlines need.
@Suite("Ed25519 and SHA-512")
struct Ed25519Tests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            out.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return out
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// Digests computed by Python's hashlib for a fixed pattern, around block and padding edges.
    @Test(arguments: [
        (0, "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"),
        (1, "e45bf5817ddf94aa2f7a407071f0eedc6beb98f768b4cd33d1176d44d1563a45a5d7212290eb7670c6786b13591aedac86478993895e8b24e612014abaa6ba04"),
        (111, "68cffa6d0d76f309c9ce0d35280939f8e25990c43b7b086ccdf709be35b07d4ddba599541ff2b1c19d34ea49aeafb9659adb7ac3c0b078bb30a22d57fc6687ef"),
        (112, "d0865c524d1dddf7c23b799c413f5adcd7caefd3f66a9b49750ec81066012c25a8bcf94ddea6dc525691673097ca40e0101e897fc97218cfdb0704084e2bef4b"),
        (113, "606314353bd419f9f7720e8297f2af8a9ed5f0bb0bed29b716bf18e34577623ae7effa46f496bd4282134e7e895284a4760a910d2ad8ec11e9dd75863058cd9c"),
        (127, "e0b6a20f1c0c88970a9340152cd5a1c1ecf3d3b8de55102741879438079473540133b812706e5dbec322c8c9523b6fc8c6d16ee626e87ad5fe3d2916afedc369"),
        (128, "99b16f17aa0b969a5b8f08f367719d516e330ccd2660b6f0688ec031dbc783de50a1cd185a2568dba75070a2403d17d4741d163578515dfd2ff756ddfe4d47b1"),
        (129, "a1556e29185778aa5991e34b8884c840d589f0fbb4b8ed590e51e9ac4eb03a008125000db2671f8fe7f485b59a77b518670078ecb41a54b4cd02a7f1d2ca4c6d"),
        (240, "9d60ee60d29ec4fa0b9690c04c1c29413bbe3ed345639182d9d53dcc05926b77b04f4fec1562fb85182954c96b7cbb5d5e4410251ff4f352d09a2da90419fb13"),
        (1000, "00e36fccf193e59697a92b5ab24666ce6326d7fa16bf10832d0991ddc591112e9dfa6a636950ed9c4d67344a760654c2ff7785e1d60094d651038735b5dccabd"),
    ])
    func sha512MatchesAReference(length: Int, digest: String) {
        let pattern = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) }
        #expect(Self.hex(SHA512.hash(pattern)) == digest)
        // Parts are hashed as their concatenation.
        let cut = length / 3
        #expect(Self.hex(SHA512.hash(Array(pattern[..<cut]), Array(pattern[cut...]))) == digest)
    }

    @Test func sha512OfABC() {
        #expect(Self.hex(SHA512.hash(Array("abc".utf8))) == "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f")
    }

    struct Case: CustomStringConvertible {
        let id: Int
        let publicKey: [UInt8]
        let message: [UInt8]
        let signature: [UInt8]
        let valid: Bool
        let flags: [String]
        var description: String { "tcId \(id) \(flags)" }
    }

    static func wycheproof() throws -> [Case] {
        let data = try Data(contentsOf: fixtures.appendingPathComponent("wycheproof-ed25519_test.json"))
        let top = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        var cases: [Case] = []
        for group in try #require(top["testGroups"] as? [[String: Any]]) {
            let key = try #require((group["publicKey"] as? [String: Any])?["pk"] as? String)
            for test in try #require(group["tests"] as? [[String: Any]]) {
                let result = try #require(test["result"] as? String)
                #expect(result == "valid" || result == "invalid", "no \"acceptable\" cases in this file")
                cases.append(Case(
                    id: try #require(test["tcId"] as? Int), publicKey: bytes(key), message: bytes(try #require(test["msg"] as? String)),
                    signature: bytes(try #require(test["sig"] as? String)), valid: result == "valid",
                    flags: test["flags"] as? [String] ?? []))
            }
        }
        return cases
    }

    @Test func everyWycheproofCaseGivesItsExpectedResult() async throws {
        let cases = try Self.wycheproof()
        #expect(cases.count == 151)
        let wrong = try await blocking {
            cases.filter { Ed25519.verify(signature: $0.signature, of: $0.message, publicKey: $0.publicKey) != $0.valid }
        }
        #expect(wrong.isEmpty, "\(wrong.count) wrong: \(wrong.prefix(20))")
        #expect(cases.filter { !$0.valid }.count == 63, "the invalid cases are all there")
    }

    /// RFC 8032 section 7.1, TEST 1 (the empty message) and TEST 3 (two bytes).
    @Test func rfc8032Vectors() async throws {
        let failed = try await blocking { Self.rfc8032Verifications() }
        #expect(failed.isEmpty, "\(failed)")
    }

    /// The failed checks (run off the cooperative threads; expectations are made by the test).
    static func rfc8032Verifications() -> [String] {
        var failed: [String] = []
        let test1Key = Self.bytes("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
        let test1Signature = Self.bytes("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b")
        if !(Ed25519.verify(signature: test1Signature, of: [], publicKey: test1Key)) { failed.append("Ed25519.verify(signature: test1Signature, of: [], publicKey:") }
        let test3Key = Self.bytes("fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025")
        let test3Signature = Self.bytes("6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a")
        if !(Ed25519.verify(signature: test3Signature, of: [0xaf, 0x82], publicKey: test3Key)) { failed.append("Ed25519.verify(signature: test3Signature, of: [0xaf, 0x82], ") }
        // One bit changed anywhere — message, signature, key — and it fails.
        if !(!Ed25519.verify(signature: test3Signature, of: [0xaf, 0x83], publicKey: test3Key)) { failed.append("!Ed25519.verify(signature: test3Signature, of: [0xaf, 0x83],") }
        var flipped = test3Signature
        flipped[10] ^= 1
        if !(!Ed25519.verify(signature: flipped, of: [0xaf, 0x82], publicKey: test3Key)) { failed.append("!Ed25519.verify(signature: flipped, of: [0xaf, 0x82], public") }
        if !(!Ed25519.verify(signature: test3Signature, of: [0xaf, 0x82], publicKey: test1Key)) { failed.append("!Ed25519.verify(signature: test3Signature, of: [0xaf, 0x82],") }
        return failed
    }

    /// RFC 8032 section 7.1: the keys and signatures of TEST 1 and TEST 3 from their secret keys.
    @Test func signingGivesRFC8032sSignatures() async throws {
        let failed = try await blocking { Self.rfc8032Signatures() }
        #expect(failed.isEmpty, "\(failed)")
    }

    /// The failed checks (run off the cooperative threads; expectations are made by the test).
    static func rfc8032Signatures() -> [String] {
        var failed: [String] = []
        let test1Seed = Self.bytes("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
        if !(Self.hex(Ed25519.publicKey(seed: test1Seed)) == "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a") { failed.append("line \(#line)") }
        if !(Self.hex(Ed25519.sign([], seed: test1Seed)) == "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b") { failed.append("line \(#line)") }
        let test3Seed = Self.bytes("c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7")
        if !(Self.hex(Ed25519.publicKey(seed: test3Seed)) == "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025") { failed.append("line \(#line)") }
        if !(Self.hex(Ed25519.sign([0xaf, 0x82], seed: test3Seed)) == "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a") { failed.append("line \(#line)") }
        return failed
    }

    @Test func whatIsSignedVerifiesAndNothingElse() async throws {
        let failed = try await blocking { Self.roundTrips() }
        #expect(failed.isEmpty, "\(failed)")
    }

    /// The failed checks (run off the cooperative threads; expectations are made by the test).
    static func roundTrips() -> [String] {
        var failed: [String] = []
        var generator = SystemRandomNumberGenerator()
        for length in [0, 1, 64, 1000] {
            let seed = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let message = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let signature = Ed25519.sign(message, seed: seed)
            let key = Ed25519.publicKey(seed: seed)
            if !(Ed25519.verify(signature: signature, of: message, publicKey: key)) { failed.append("Ed25519.verify(signature: signature, of: message, publicKey:") }
            if !(!Ed25519.verify(signature: signature, of: message + [0], publicKey: key)) { failed.append("!Ed25519.verify(signature: signature, of: message + [0], pub") }
        }
        return failed
    }

    @Test func malformedInputsAreRefusedNotTrapped() {
        let key = Self.bytes("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
        #expect(!Ed25519.verify(signature: [], of: [], publicKey: key))
        #expect(!Ed25519.verify(signature: [UInt8](repeating: 0, count: 64), of: [], publicKey: key))
        #expect(!Ed25519.verify(signature: [UInt8](repeating: 0xff, count: 64), of: [], publicKey: key))
        #expect(!Ed25519.verify(signature: [UInt8](repeating: 0, count: 64), of: [], publicKey: []))
        #expect(!Ed25519.verify(signature: [UInt8](repeating: 0, count: 64), of: [], publicKey: [UInt8](repeating: 0xff, count: 32)))
    }
}
}
