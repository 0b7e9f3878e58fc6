import Foundation
import Testing
import TestSupport
@testable import FeatureFlags

@Suite("JSON parser")
struct JSONParserTests {
    private func kind(_ text: String) -> FlagJSONError.Kind? {
        kind(Array(text.utf8))
    }

    private func kind(_ bytes: [UInt8]) -> FlagJSONError.Kind? {
        do {
            _ = try FlagJSON.parse(bytes)
            return nil
        } catch {
            return error.kind
        }
    }

    @Test func parsesADocument() throws {
        let text = #" { "a" : [ true , false , null , "x" , -1.5e3 ] , "b" : { } , "c" : [ ] } "#
        #expect(try FlagJSON.parse(text) == ["a": [true, false, .null, "x", -1500.0], "b": [:], "c": []])
    }

    @Test func escapesAndUnicode() throws {
        #expect(try FlagJSON.parse(#""a\"b\\c\/d\b\f\n\r\t""#) == .string("a\"b\\c/d\u{8}\u{c}\n\r\t"))
        #expect(try FlagJSON.parse(#""\u00e9\u4e2d""#) == .string("é中"))
        #expect(try FlagJSON.parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try FlagJSON.parse("\"é😀\"") == .string("é😀"))
    }

    @Test func rejectsInvalidUTF8() {
        #expect(kind([0x22, 0xC3, 0x28, 0x22]) == .invalidUTF8)  // bad continuation
        #expect(kind([0x22, 0xC0, 0xAF, 0x22]) == .invalidUTF8)  // overlong
        #expect(kind([0x22, 0xED, 0xA0, 0x80, 0x22]) == .invalidUTF8)  // encoded surrogate
        #expect(kind([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22]) == .invalidUTF8)  // above U+10FFFF
        #expect(kind([0x22, 0xF0, 0x90, 0x80, 0x22]) == .invalidUTF8)  // truncated sequence
        #expect(kind([0x22, 0x5C, 0x6E, 0xFF, 0x22]) == .invalidUTF8)  // after an escape
    }

    @Test func rejectsBadEscapesAndControlCharacters() {
        #expect(kind(#""\x""#) == .invalidEscape)
        #expect(kind(#""\u12G4""#) == .invalidEscape)
        #expect(kind(#""\ud800""#) == .invalidEscape)
        #expect(kind(#""\udc00""#) == .invalidEscape)
        #expect(kind(#""\ud800\u0041""#) == .invalidEscape)
        #expect(kind("\"a\u{1}b\"") == .controlCharacter)
    }

    @Test func rejectsDuplicateKeys() {
        #expect(kind(#"{"a":1,"a":2}"#) == .duplicateKey("a"))
    }

    @Test func rejectsDeepNestingWithoutCrashing() async throws {
        try await blocking {
            let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
            #expect(kind(deep) == .tooDeep(limit: FlagJSON.defaultMaxDepth))
            let deepObjects = String(repeating: #"{"a":"#, count: 100_000)
            #expect(kind(deepObjects) == .tooDeep(limit: FlagJSON.defaultMaxDepth))
            let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
            #expect(kind(ok) == nil)
        }
    }

    @Test func numbersOutOfRange() throws {
        #expect(kind("1e999") == .numberOutOfRange)
        #expect(kind("-1e400") == .numberOutOfRange)
        #expect(try FlagJSON.parse("1e-400") == .double(0))
        #expect(try FlagJSON.parse("123456789012345678901234567890") == .double(1.2345678901234568e29))
    }

    @Test func rejectsMalformedNumbers() {
        #expect(kind("01") == .trailingData)
        #expect(kind("-") == .unexpectedEnd)
        #expect(kind("1.") == .unexpectedEnd)
        #expect(kind("1.e5") == .unexpectedByte(UInt8(ascii: "e")))
        #expect(kind("+1") == .unexpectedByte(UInt8(ascii: "+")))
        #expect(kind(".5") == .unexpectedByte(UInt8(ascii: ".")))
        #expect(kind("1e") == .unexpectedEnd)
    }

    @Test func rejectsStructuralErrors() {
        #expect(kind("") == .empty)
        #expect(kind("   ") == .empty)
        #expect(kind("[1,]") == .unexpectedByte(UInt8(ascii: "]")))
        #expect(kind("[1 2]") == .unexpectedByte(UInt8(ascii: "2")))
        #expect(kind(#"{"a" 1}"#) == .unexpectedByte(UInt8(ascii: "1")))
        #expect(kind("{1:2}") == .unexpectedByte(UInt8(ascii: "1")))
        #expect(kind("tru") == .unexpectedEnd)
        #expect(kind("nul!") == .unexpectedByte(UInt8(ascii: "!")))
        #expect(kind("[] []") == .trailingData)
        #expect(kind("\u{FEFF}{}") != nil)
    }

    @Test func everyPrefixOfADocumentFailsCleanly() async throws {
        try await blocking {
            let text = Array(#"{"flags":{"a":{"value":[1,2.5,"é\u00e9",{"k":null}],"variant":"on"}},"v":true}"#.utf8)
            for n in 0..<text.count {
                #expect(kind(Array(text[0..<n])) != nil, "prefix of \(n) bytes parsed")
            }
            #expect(kind(text) == nil)
        }
    }

    @Test func errorsSayWhere() {
        do {
            _ = try FlagJSON.parse("[1, x]")
        } catch {
            #expect(error.offset == 4)
            #expect(error.description == "JSON unexpected byte 0x78 at line 1, column 5 (byte 4)")
        }
        // Lines count from 1; columns count characters, so a multi-byte letter is one column.
        do {
            _ = try FlagJSON.parse("{\n  \"é\": 1,\n  \"b\": tru\n}")
            Issue.record("parsed")
        } catch {
            #expect(error.line == 3)
            #expect(error.column == 11)  // the line break after "tru"
            #expect(error.description.hasPrefix("JSON unexpected byte 0xa at line 3, column 11"))
        }
        // An error made without its input says only the byte.
        #expect(FlagJSONError(.empty, at: 0).description == "JSON empty input at byte 0")
        #expect(FlagJSONError(.empty, at: 0).line == nil)
    }

    @Test func parsesFromDataAndNonContiguousSequences() throws {
        #expect(try FlagJSON.parse(Data("[1]".utf8)) == [1])
        #expect(try FlagJSON.parse("[2]".utf8.lazy.map { $0 }) == [2])
    }
}
