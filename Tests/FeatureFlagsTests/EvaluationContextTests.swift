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

    @Test func sha256InPiecesEqualsAtOnce() {
        let message = (0..<1_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let whole = SHA256.hex(message)
        for pieces in [1, 3, 63, 64, 65, 200] {
            var hash = SHA256()
            var offset = 0
            while offset < message.count {
                let end = min(message.count, offset + pieces)
                hash.update(message[offset..<end])
                offset = end
            }
            #expect(Hex.encode(hash.finalize()) == whole, "pieces of \(pieces)")
        }
        // Lengths around the padding boundary.
        for n in 54...66 {
            let bytes = [UInt8](repeating: 0x61, count: n)
            var hash = SHA256()
            hash.update(bytes.lazy.map { $0 })  // not contiguous: the copying path
            #expect(Hex.encode(hash.finalize()) == SHA256.hex(bytes))
        }
        #expect(SHA256.hex([UInt8](repeating: 0x61, count: 56)) == "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a")
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
