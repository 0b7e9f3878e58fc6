import Foundation
import Testing
import TestSupport
@testable import FeatureFlags

@Suite("FlagValue and conversions")
struct FlagValueTests {
    enum Theme: String, CaseIterable, Sendable { case light, dark }
    enum Tier: String, Codable, Sendable { case personal, business }
    enum Level: Int, Sendable { case low = 1, high = 2 }

    struct Banner: Decodable, Equatable, Sendable {
        let title: String
        let priority: Int
        let ratio: Double
        let link: URL?
        let tags: [String]
    }

    struct TitledBanner: Codable, Equatable, Sendable {
        let title: String
    }

    @Test func integerStaysIntegerAndDoubleStaysDouble() throws {
        #expect(try FlagJSON.parse("1") == .int(1))
        #expect(try FlagJSON.parse("1.0") == .double(1.0))
        #expect(try FlagJSON.parse("-0") == .int(0))
        #expect(try FlagJSON.parse("1e2") == .double(100))
        #expect(try FlagJSON.parse("9223372036854775807") == .int(Int.max))
        #expect(try FlagJSON.parse("-9223372036854775808") == .int(Int.min))
        #expect(try FlagJSON.parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
    }

    @Test func writerKeepsTheNumberForm() throws {
        let value: FlagValue = ["i": 1, "d": 1.0, "s": "x\n\"", "l": [true, .null], "o": ["k": -2.5]]
        let text = FlagJSON.string(value, sortedKeys: true)
        #expect(text == #"{"d":1.0,"i":1,"l":[true,null],"o":{"k":-2.5},"s":"x\n\""}"#)
        #expect(try FlagJSON.parse(text) == value)
    }

    @Test func nonFiniteDoublesWriteAsNull() {
        #expect(FlagJSON.string(.double(.infinity)) == "null")
        #expect(FlagJSON.string(.double(.nan)) == "null")
    }

    @Test func codableRoundTripThroughFoundation() throws {
        let value: FlagValue = ["a": [1, 2.5, "x", false, .null], "b": ["c": "d"]]
        let data = try JSONEncoder().encode(value)
        #expect(try JSONDecoder().decode(FlagValue.self, from: data) == value)
    }

    @Test func accessors() {
        #expect(FlagValue.bool(true).boolValue == true)
        #expect(FlagValue.int(3).intValue == 3)
        #expect(FlagValue.int(3).doubleValue == 3.0)
        #expect(FlagValue.string("s").stringValue == "s")
        #expect(FlagValue.list([1]).listValue == [1])
        #expect(FlagValue.object(["k": 1]).objectValue == ["k": 1])
        #expect(FlagValue.null.isNull)
        #expect(FlagValue.string("s").intValue == nil)
        #expect(FlagValue.bool(true).typeName == "bool")
    }

    @Test func primitiveConversions() {
        #expect(FlagKey("b", default: false).value(from: true) == true)
        #expect(FlagKey("i", default: 0).value(from: 7) == 7)
        #expect(FlagKey("d", default: 0.0).value(from: 7) == 7.0)
        #expect(FlagKey("d", default: 0.0).value(from: 2.5) == 2.5)
        #expect(FlagKey("s", default: "").value(from: "x") == "x")
        #expect(FlagKey("v", default: FlagValue.null).value(from: ["a": 1]) == ["a": 1])
        #expect(FlagKey("l", default: [String]()).value(from: ["a", "b"]) == ["a", "b"])
        #expect(FlagKey("o", default: [String: Int]()).value(from: ["a": 1]) == ["a": 1])
    }

    @Test func primitiveMismatchesAreRejected() {
        #expect(FlagKey("b", default: false).value(from: "yes") == nil)
        #expect(FlagKey("b", default: false).value(from: "TRUE") == nil)
        #expect(FlagKey("b", default: false).value(from: 1) == nil)
        #expect(FlagKey("i", default: 0).value(from: 2.5) == nil)
        #expect(FlagKey("i", default: 0).value(from: "2.5") == nil)
        #expect(FlagKey("i", default: 0).value(from: "two") == nil)
        #expect(FlagKey("i", default: 0).value(from: "\"2\"") == nil)
        #expect(FlagKey("s", default: "").value(from: 1) == nil)
        #expect(FlagKey("l", default: [String]()).value(from: ["a", 1]) == nil)
    }

    @Test func textHoldingJSONConvertsToTheKeysType() {
        // Services such as Firebase Remote Config send every value as text.
        #expect(FlagKey("b", default: false).value(from: "true") == true)
        #expect(FlagKey("b", default: true).value(from: "false") == false)
        #expect(FlagKey("i", default: 0).value(from: "150") == 150)
        #expect(FlagKey("i", default: 0).value(from: "-7") == -7)
        #expect(FlagKey("d", default: 0.0).value(from: "2.5") == 2.5)
        #expect(FlagKey("d", default: 0.0).value(from: "3") == 3.0)
        #expect(FlagKey("l", default: [String]()).value(from: #"["usage","map"]"#) == ["usage", "map"])
        #expect(FlagKey("o", default: [String: Int]()).value(from: #"{"a":1}"#) == ["a": 1])
        #expect(FlagKey("s", default: "").value(from: "150") == "150")
        #expect(FlagKey("s", default: "").value(from: "true") == "true")
        let banner = FlagKey("banner", default: Banner(title: "", priority: 0, ratio: 0, link: nil, tags: []))
        #expect(banner.value(from: #"{"title":"T","priority":1,"ratio":0.5,"tags":[]}"#)?.title == "T")
        let level = FlagKey("level", default: Level.low)
        #expect(level.value(from: "2") == .high)
    }

    @Test func rawRepresentableEnums() {
        let theme = FlagKey("theme", default: Theme.light)
        #expect(theme.value(from: "dark") == .dark)
        #expect(theme.value(from: "sepia") == nil)
        #expect(theme.flagValue(for: .dark) == "dark")
        let level = FlagKey("level", default: Level.low)
        #expect(level.value(from: 2) == .high)
        #expect(level.value(from: 3) == nil)
    }

    @Test func codableEnumsReadByRawValue() {
        let tier = FlagKey("tier", default: Tier.personal)
        #expect(tier.value(from: "business") == .business)
        #expect(tier.value(from: 1) == nil)
        #expect(tier.flagValue(for: .business) == "business")
    }

    @Test func decodableStructs() throws {
        let key = FlagKey("banner", default: Banner(title: "", priority: 0, ratio: 0, link: nil, tags: []))
        let value: FlagValue = [
            "title": "Hello", "priority": 2, "ratio": 1, "link": "https://example.com/x", "tags": ["a"],
        ]
        let banner = try #require(key.value(from: value))
        #expect(banner == Banner(title: "Hello", priority: 2, ratio: 1.0, link: URL(string: "https://example.com/x"), tags: ["a"]))
        // A missing optional member decodes as nil.
        let noLink: FlagValue = ["title": "T", "priority": 1, "ratio": 0.5, "tags": []]
        #expect(key.value(from: noLink)?.link == nil)
        // Wrong member type, missing member, fractional integer: all mismatches.
        #expect(key.value(from: ["title": 1, "priority": 1, "ratio": 0.5, "tags": []]) == nil)
        #expect(key.value(from: ["priority": 1, "ratio": 0.5, "tags": []]) == nil)
        #expect(key.value(from: ["title": "T", "priority": 1.5, "ratio": 0.5, "tags": []]) == nil)
        #expect(key.value(from: "not an object") == nil)
        // Not Encodable: cannot be turned back into a flag value.
        #expect(key.flagValue(for: banner) == nil)
    }

    @Test func encodableStructsEncodeForOverrides() {
        let key = FlagKey("b", default: TitledBanner(title: ""))
        #expect(key.flagValue(for: TitledBanner(title: "x")) == ["title": "x"])
    }

    @Test func decoderReportsTheCodingPath() {
        struct Outer: Decodable { let inner: [Inner] }
        struct Inner: Decodable { let n: UInt8 }
        do {
            _ = try FlagValueDecoder().decode(Outer.self, from: ["inner": [["n": 1], ["n": 300]]])
            Issue.record("expected a failure")
        } catch let DecodingError.typeMismatch(_, context) {
            #expect(context.codingPath.map(\.stringValue) == ["inner", "1", "n"])
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    // MARK: JSON for your own endpoints

    @Test func jsonIsReadAsTheServiceSentIt() throws {
        let value = try FlagValue(json: Array(#"{"n": 1, "d": 1.0, "s": "é", "l": [true, null]}"#.utf8))
        #expect(value == ["n": 1, "d": 1.0, "s": "é", "l": [true, .null]])
        #expect(value.objectValue?["n"]?.intValue == 1 && value.objectValue?["d"]?.intValue == nil)
        #expect(try FlagValue(json: Array(value.description.utf8)) == value)
    }

    @Test(arguments: [
        (#"{"a": 1, "a": 2}"#, "duplicate"),
        (#"{"a": }"#, "line 1"),
        ("[1, 2", "end"),
        ("", "empty"),
    ])
    func badJSONIsAParseErrorSayingWhere(text: String, mentions: String) {
        do {
            _ = try FlagValue(json: Array(text.utf8))
            Issue.record("\(text) parsed")
        } catch {
            #expect(error.code == .parseError)
            #expect(error.message.lowercased().contains(mentions), "\(error.message)")
        }
    }

    @Test func invalidUTF8AndDeepNestingAreParseErrors() {
        #expect(throws: FlagError.self) { try FlagValue(json: [0x22, 0xC3, 0x28, 0x22]) }
        #expect(throws: FlagError.self) { try FlagValue(json: Array(String(repeating: "[", count: 65).utf8) + Array(String(repeating: "]", count: 65).utf8)) }
    }
}
