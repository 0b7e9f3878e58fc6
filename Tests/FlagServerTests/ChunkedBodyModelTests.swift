import Foundation
import Testing
import TestSupport
@testable import FlagServer

/// Random bodies sent in the chunked coding as RFC 9112 §7.1 allows it — any bytes in the data
/// (CR and LF included), sizes in either case of hex with leading zeros, extensions with bad
/// whitespace around `;` and `=`, token or quoted values (escapes, obs-text), trailer fields —
/// fed in random pieces: each decodes to its body, consuming exactly its framing, and the bytes
/// after it are left for the next request. Deterministic: each seed is one body.
@Suite("Chunked bodies against a model")
struct ChunkedBodyModelTests {
    static func hex(_ size: Int, _ rng: inout SplitMix) -> String {
        let digits = String(size, radix: 16, uppercase: Bool.random(using: &rng))
        return String(repeating: "0", count: Int.random(in: 0...2, using: &rng)) + digits
    }

    /// Bad whitespace (RFC 9110 §5.6.3): nothing, or spaces and tabs.
    static func whitespace(_ rng: inout SplitMix) -> [UInt8] {
        let choices: [[UInt8]] = [[], [0x20], [0x09], [0x20, 0x09]]
        return choices[Int.random(in: 0..<choices.count, using: &rng)]
    }

    static func extensions(_ rng: inout SplitMix) -> [UInt8] {
        // One statement per piece: Swift 6.0 cannot type-check the sum of them in time.
        let names = ["name", "x-ext", "a1"]
        var text: [UInt8] = []
        for _ in 0..<Int.random(in: 0...2, using: &rng) {
            text += whitespace(&rng)
            text.append(UInt8(ascii: ";"))
            text += whitespace(&rng)
            text += Array(names[Int.random(in: 0..<names.count, using: &rng)].utf8)
            let valued = Int.random(in: 0..<3, using: &rng)
            guard valued > 0 else { continue }
            text += whitespace(&rng)
            text.append(UInt8(ascii: "="))
            text += whitespace(&rng)
            if valued == 1 {
                text += Array("token-1".utf8)
            } else {
                // A quoted value: an escaped quote and backslash, a semicolon, obs-text.
                text += Array("\"a \\\" b \\\\ ; c ".utf8)
                text += [0xC3, 0xA9, UInt8(ascii: "\"")]
            }
        }
        return text
    }

    @Test func randomChunkedBodiesDecodeToTheirBytes() {
        var failures: [String] = []
        for seed in UInt64(1)...1_000 {
            var rng = SplitMix(seed: seed)
            var body: [UInt8] = []
            var wire: [UInt8] = []
            for _ in 0..<Int.random(in: 0...5, using: &rng) {
                // Any byte, and often the ones framing is made of (CR, LF) or that end text (NUL).
                let special: [UInt8] = [0x0D, 0x0A, 0x00, 0x30, 0xFF]
                let data = (0..<Int.random(in: 1...40, using: &rng)).map { _ in
                    Bool.random(using: &rng) ? special[Int.random(in: 0..<special.count, using: &rng)] : UInt8.random(in: 0...255, using: &rng)
                }
                body += data
                wire += Array(Self.hex(data.count, &rng).utf8)
                wire += Self.extensions(&rng)
                wire += [0x0D, 0x0A]
                wire += data
                wire += [0x0D, 0x0A]
            }
            wire += Array(String(repeating: "0", count: Int.random(in: 1...3, using: &rng)).utf8)
            wire += Self.extensions(&rng)
            wire += [0x0D, 0x0A]
            for _ in 0..<Int.random(in: 0...2, using: &rng) {
                wire += Array(["X-Checksum: abc", "X-Empty:", "Expires:\t0 "].randomElement(using: &rng)!.utf8) + [0x0D, 0x0A]
            }
            wire += [0x0D, 0x0A]
            let framed = wire.count
            wire += Array("GET /next HTTP/1.1\r\n".utf8)  // the next request, pipelined
            var decoder = ChunkedBodyDecoder(maxBodyBytes: 10_000, maxFramingBytes: 2_000)
            var fed = 0
            var step = ChunkedBodyDecoder.Step.more
            while step == .more, fed < wire.count {
                fed = min(wire.count, fed + Int.random(in: 1...16, using: &rng))
                step = decoder.advance(Array(wire[..<fed]))
            }
            if step != .done(consumed: framed) || decoder.body != body {
                let text = String(decoding: wire, as: UTF8.self).debugDescription
                failures.append("seed \(seed): \(text) gave \(step), \(decoder.body.count) of \(body.count) bytes")
            }
            if failures.count >= 3 { break }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }
}
