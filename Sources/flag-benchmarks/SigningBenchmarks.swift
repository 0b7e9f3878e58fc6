import FeatureFlags
import Foundation

/// Verifying a signed document: Ed25519 over a 20 KB and a 1 MiB document (the SHA-512 of the
/// bytes grows with the size, the curve arithmetic does not), beside decoding the same bytes.
enum SigningBenchmarks {
    static func run(_ report: Report, quick: Bool) throws {
        report.section("Signed documents — Ed25519 (RFC 8032) verification")
        let runs = quick ? 5 : 15
        let seed = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) }
        let key = Ed25519.publicKey(seed: seed)
        for (name, size) in [("20 KB", 20 * 1024), ("1 MiB", 1 << 20)] {
            let document = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let signature = Ed25519.sign(document, seed: seed)
            guard Ed25519.verify(signature: signature, of: document, publicKey: key) else {
                throw BenchmarkError("a \(name) signature did not verify")
            }
            let verify = Harness.measure(operations: 1, runs: runs) { _ in
                blackHole(Ed25519.verify(signature: signature, of: document, publicKey: key))
            }
            let hash = Harness.measure(operations: 1, runs: runs) { _ in blackHole(SHA512.hash(document)) }
            report.add(.init(section: "signing", name: "SHA-512 of a \(name) document", value: hash.median / 1_000, unit: "µs", spread: hash.spread))
            report.add(.init(section: "signing", name: "verify a \(name) document", value: verify.median / 1_000, unit: "µs", spread: verify.spread))
        }
    }
}
