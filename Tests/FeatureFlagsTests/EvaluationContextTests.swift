import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FlagServer

@Suite("EvaluationContext")
struct EvaluationContextTests {
    @Test func fingerprintIsStableAndOrderIndependent() {
        let a = EvaluationContext(targetingKey: "user-1", attributes: ["venue": "v-42", "region": "us"])
        let b = EvaluationContext(targetingKey: "user-1", attributes: ["region": "us", "venue": "v-42"])
        #expect(a.fingerprint == b.fingerprint)
        #expect(a == b)
        #expect(a.fingerprint.count == 32)
        let isHex = a.fingerprint.allSatisfy { $0.isHexDigit }
        #expect(isHex)
        // Pinned: a change of the canonical form would orphan every stored Last-Known-Good.
        #expect(EvaluationContext.anonymous.fingerprint == EvaluationContext().fingerprint)
    }

    @Test func fingerprintDistinguishesContexts() {
        let base = EvaluationContext(targetingKey: "user-1", venue: "v-42")
        let others = [
            EvaluationContext(targetingKey: "user-2", venue: "v-42"),
            EvaluationContext(targetingKey: "user-1", venue: "v-43"),
            EvaluationContext(targetingKey: nil, venue: "v-42"),
            EvaluationContext(targetingKey: "user-1", attributes: ["venue": 42]),
            base.with("region", "eu"),
        ]
        for other in others { #expect(other.fingerprint != base.fingerprint) }
        #expect(Set(others.map(\.fingerprint)).count == others.count)
    }

    @Test func fingerprintAndDescriptionContainNoAttributeValues() {
        let secret = "venue-secret-9f3a"
        let context = EvaluationContext(targetingKey: "alice@example.com", venue: secret, partner: "auralink")
        for text in [context.fingerprint, context.description, "\(context)"] {
            #expect(!text.contains(secret))
            #expect(!text.contains("alice"))
            #expect(!text.contains("auralink"))
        }
    }

    @Test func wellKnownAttributes() {
        let context = EvaluationContext(
            targetingKey: "u", venue: "v", partner: "auralink", planTier: "business", region: "us", appVersion: "1.2.3.4",
            attributes: ["extra": true])
        #expect(context.string(EvaluationContext.Attribute.venue) == "v")
        #expect(context.string(DemoAttribute.partner) == "auralink")
        #expect(context.string(DemoAttribute.planTier) == "business")
        #expect(context.string(EvaluationContext.Attribute.region) == "us")
        #expect(context.string(EvaluationContext.Attribute.appVersion) == "1.2.3.4")
        #expect(context["extra"] == true)
        // nil arguments do not erase attributes given explicitly.
        let kept = EvaluationContext(targetingKey: nil, venue: nil, attributes: ["venue": "explicit"])
        #expect(kept.string("venue") == "explicit")
    }

    @Test func flatFormRoundTrips() {
        let context = EvaluationContext(targetingKey: "u", attributes: ["venue": "v", "n": 3])
        #expect(context.flagValue == ["targetingKey": "u", "venue": "v", "n": 3])
        #expect(EvaluationContext(flagValue: context.flagValue) == context)
        #expect(EvaluationContext(flagValue: "not an object") == nil)
    }

    @Test func withReplacesAndRemoves() {
        let context = EvaluationContext(targetingKey: "u", venue: "a")
        #expect(context.with("venue", "b").string("venue") == "b")
        #expect(context.with("venue", nil)["venue"] == nil)
        #expect(context.with(targetingKey: "w").targetingKey == "w")
    }

    @Test func sha256KnownAnswers() async throws {
        try await blocking {
            #expect(SHA256.hex(Array("".utf8)) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
            #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
            let long = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
            #expect(SHA256.hex(long) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
            #expect(SHA256.hex([UInt8](repeating: 0x61, count: 1_000_000)) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        }
    }

    @Test func sha256AroundThePaddingBoundary() {
        // Messages of 54…66 bytes: the length field fits in the last block, or needs one more.
        let expected = [
            "a3f01b6939256127582ac8ae9fb47a382a244680806a3f613a118851c1ca1d47",
            "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318",
            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a",
            "f13b2d724659eb3bf47f2dd6af1accc87b81f09f59f2b75e5c0bed6589dfe8c6",
            "d5c039b748aa64665782974ec3dc3025c042edf54dcdc2b5de31385b094cb678",
            "111bb261277afd65f0744b247cd3e47d386d71563d0ed995517807d5ebd4fba3",
            "11ee391211c6256460b6ed375957fadd8061cafbb31daf967db875aebd5aaad4",
            "35d5fc17cfbbadd00f5e710ada39f194c5ad7c766ad67072245f1fad45f0f530",
            "f506898cc7c2e092f9eb9fadae7ba50383f5b46a2a4fe5597dbb553a78981268",
            "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34",
            "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb",
            "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0",
            "ac137fce49837c7c2945f6160d3c0e679e6f40070850420a22bc10e0692cbdc7",
        ]
        for (n, digest) in zip(54...66, expected) {
            #expect(SHA256.hex([UInt8](repeating: 0x61, count: n)) == digest, "\(n) bytes")
            #expect(SHA256.hex([UInt8](repeating: 0x61, count: n).lazy.map { $0 }) == digest, "\(n) bytes, not contiguous")
        }
        // The hex is the digest's bytes, high nibble first.
        let abc = SHA256.digest(Array("abc".utf8))
        #expect(SHA256.hex(Array("abc".utf8)) == abc.map { String($0 >> 4, radix: 16) + String($0 & 0xF, radix: 16) }.joined())
    }

    @Test func checksumSeesEverySingleByteChange() async throws {
        try await blocking {
            let base = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let sum = Checksum.of(base)
            for i in base.indices {
                var changed = base
                changed[i] ^= 0x01
                #expect(Checksum.of(changed) != sum)
            }
            #expect(Checksum.of(Array(base.dropLast())) != sum)
        }
    }
}
