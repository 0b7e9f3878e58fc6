import Foundation
import Testing
import TestSupport
@testable import FeatureFlags

/// Random values written by the library's JSON writer and read back by its parser: every value
/// comes back equal (doubles bit for bit, every `Int` from `Int.min` to `Int.max`, strings with
/// any scalar, control characters included), and canonical bytes (sorted keys) are a fixed
/// point. Strings are also read from random mixes of raw UTF-8 and `\u` escapes (surrogate
/// pairs included), as other writers send them. Deterministic: each seed is one value.
@Suite("JSON written and read back")
struct JSONRoundTripTests {
    /// A scalar from every range that matters: ASCII (control characters included), two-,
    /// three- and four-byte UTF-8, and the edges around the surrogates.
    static func scalar(_ rng: inout SplitMix) -> Unicode.Scalar {
        let ranges: [ClosedRange<UInt32>] = [0...0x7F, 0x80...0x7FF, 0x800...0xD7FF, 0xE000...0xFFFF, 0x10000...0x10FFFF]
        let range = ranges[Int.random(in: 0..<ranges.count, using: &rng)]
        return Unicode.Scalar(UInt32.random(in: range, using: &rng)) ?? "?"
    }

    static func string(_ rng: inout SplitMix) -> String {
        var text = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0...12, using: &rng) { text.append(scalar(&rng)) }
        return String(text)
    }

    static func double(_ rng: inout SplitMix) -> Double {
        switch Int.random(in: 0..<4, using: &rng) {
        case 0: return Double(bitPattern: rng.next())  // any bit pattern (non-finite ones are skipped)
        case 1: return Double(Int.random(in: -1_000...1_000, using: &rng)) / 8
        case 2: return [0.0, -0.0, .leastNonzeroMagnitude, .greatestFiniteMagnitude, .ulpOfOne, 0.1, 1e300, -1e-300].randomElement(using: &rng) ?? 0
        default: return Double.random(in: -1e6...1e6, using: &rng)
        }
    }

    static func value(_ rng: inout SplitMix, depth: Int) -> FlagValue {
        switch Int.random(in: 0..<(depth > 3 ? 6 : 8), using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2:
            let edges = [Int.min, Int.max, 0, -1, 1 << 53, (1 << 53) + 1]
            return .int(Bool.random(using: &rng) ? Int(bitPattern: UInt(rng.next())) : edges.randomElement(using: &rng) ?? 0)
        case 3:
            let d = double(&rng)
            return d.isFinite ? .double(d) : .double(1.5)
        case 4, 5: return .string(string(&rng))
        case 6: return .list((0..<Int.random(in: 0...4, using: &rng)).map { _ in value(&rng, depth: depth + 1) })
        default:
            var members: [String: FlagValue] = [:]
            for _ in 0..<Int.random(in: 0...4, using: &rng) { members[string(&rng)] = value(&rng, depth: depth + 1) }
            return .object(members)
        }
    }

    /// Bit-for-bit equality: `-0.0` is not `0.0` here, unlike `==`.
    static func same(_ a: FlagValue, _ b: FlagValue) -> Bool {
        switch (a, b) {
        case (.double(let x), .double(let y)): return x.bitPattern == y.bitPattern
        case (.list(let x), .list(let y)): return x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        case (.object(let x), .object(let y)): return x.count == y.count && x.allSatisfy { key, value in y[key].map { same(value, $0) } ?? false }
        default: return a == b
        }
    }

    @Test func everyValueReadsBackAsWritten() throws {
        var failures: [String] = []
        for seed in UInt64(1)...3_000 {
            var rng = SplitMix(seed: seed)
            let written = Self.value(&rng, depth: 0)
            let bytes = FlagJSON.bytes(written)
            let read: FlagValue
            do {
                read = try FlagJSON.parse(bytes)
            } catch {
                failures.append("seed \(seed): \(error) reading \(String(decoding: bytes, as: UTF8.self).prefix(120))")
                continue
            }
            if !Self.same(written, read) { failures.append("seed \(seed): \(written) read back as \(read)") }
            let canonical = FlagJSON.bytes(read, sortedKeys: true)
            if let again = try? FlagJSON.parse(canonical), FlagJSON.bytes(again, sortedKeys: true) != canonical {
                failures.append("seed \(seed): canonical bytes are not a fixed point")
            }
            if failures.count >= 5 { break }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }

    /// Strings as other writers send them: each scalar raw, or as `\u` escapes (a surrogate
    /// pair beyond the Basic Multilingual Plane, upper or lower case hex), or as a short escape.
    @Test func escapedStringsReadAsTheirScalars() throws {
        var failures: [String] = []
        for seed in UInt64(1)...3_000 {
            var rng = SplitMix(seed: seed)
            var expected = String.UnicodeScalarView()
            var text = "\""
            for _ in 0..<Int.random(in: 0...10, using: &rng) {
                let s = Self.scalar(&rng)
                expected.append(s)
                let short: [UInt32: String] = [0x22: "\\\"", 0x5C: "\\\\", 0x2F: "\\/", 0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"]
                let upper = Bool.random(using: &rng)
                func hex(_ unit: UInt32) -> String {
                    let digits = String(unit, radix: 16, uppercase: upper)
                    return "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
                }
                if let escape = short[s.value], Bool.random(using: &rng) {
                    text += escape
                } else if s.value < 0x20 || s.value == 0x22 || s.value == 0x5C || Bool.random(using: &rng) {
                    if s.value > 0xFFFF {
                        let v = s.value - 0x10000
                        text += hex(0xD800 + (v >> 10)) + hex(0xDC00 + (v & 0x3FF))
                    } else {
                        text += hex(s.value)
                    }
                } else {
                    text.unicodeScalars.append(s)
                }
            }
            text += "\""
            do {
                let read = try FlagJSON.parse(Array(text.utf8))
                if read != .string(String(expected)) { failures.append("seed \(seed): \(text) read as \(read)") }
            } catch {
                failures.append("seed \(seed): \(text) refused: \(error)")
            }
            if failures.count >= 5 { break }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }
}
