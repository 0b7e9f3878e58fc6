import Foundation
import Testing
import TestSupport
import FeatureFlags
@testable import FlagServer

/// OFREP's single-flag evaluation (`POST /ofrep/v1/evaluate/flags/{key}`, the core API that
/// server-side providers call): the flag as the bulk answer has it, or OFREP's error shape.
@Suite("FlagServer OFREP single-flag evaluation")
struct OFREPSingleFlagTests {
    /// Status and JSON body of one request.
    static func evaluate(_ server: FlagServer, _ key: String, body: String, method: String = "POST") throws -> (Int?, FlagValue?) {
        let text = try OriginServerRulesTests.exchange(
            server,
            "\(method) /ofrep/v1/evaluate/flags/\(key) HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
        let status = text.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) }
        let json = text.components(separatedBy: "\r\n\r\n").dropFirst().first.flatMap { try? FlagJSON.parse(Array($0.utf8)) }
        return (status, json)
    }

    static let venue42 = #"{"context":{"targetingKey":"u1","venue":"venue-42"}}"#

    @Test func aFlagIsAnsweredAsTheBulkAnswerHasIt() throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let (status, body) = try Self.evaluate(server, "new_checkout", body: Self.venue42)
        #expect(status == 200)
        #expect(body?.objectValue?["key"] == "new_checkout")
        #expect(body?.objectValue?["value"] == true, "the venue-42 pilot's value")
        // Every flag the same as in the bulk answer for the same context.
        let context = EvaluationContext(targetingKey: "u1", attributes: ["venue": "venue-42"])
        let bulk = ServerDocument.seedExample.evaluate(for: context)
        for (key, entry) in bulk.flags {
            let (_, single) = try Self.evaluate(server, key, body: Self.venue42)
            #expect(single?.objectValue == WireFormat.ofrepItem(key: key, entry: entry), "\(key)")
        }
    }

    @Test func anUnknownFlagIsFlagNotFound() throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let (status, body) = try Self.evaluate(server, "no_such_flag", body: Self.venue42)
        #expect(status == 404)
        #expect(body?.objectValue?["key"] == "no_such_flag" && body?.objectValue?["errorCode"] == "FLAG_NOT_FOUND")
    }

    @Test func aBadContextIsInvalidContextWithTheKey() throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        // OFREP's schemas require the context: a body without one is refused like a bad one.
        for bad in [#"{"context": 3}"#, "not json", "[1]", "{}", #"{"ctx": {}}"#] {
            let (status, body) = try Self.evaluate(server, "new_checkout", body: bad)
            #expect(status == 400, "\(bad)")
            #expect(body?.objectValue?["key"] == "new_checkout" && body?.objectValue?["errorCode"] == "INVALID_CONTEXT", "\(bad)")
        }
        #expect(try Self.evaluate(server, "new_checkout", body: #"{"context": {}}"#).0 == 200, "an empty context is anonymous")
        #expect(try Self.evaluate(server, "new_checkout", body: "", method: "GET").0 == 405)
    }

    @Test func reasonsAreOFREPsWhereTheSchemaHasOne() throws {
        // OFREP's schema allows STATIC, TARGETING_MATCH, SPLIT, DISABLED and UNKNOWN. A flag no
        // rule sets is STATIC; a matching rule's TARGETING_MATCH; a flag rules set where none
        // matched stays DEFAULT (OpenFeature's reason, as flagd's OFREP answers: the schema's
        // list lacks it; Docs/Testing.md).
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let anonymous = #"{"context":{"targetingKey":"nobody"}}"#
        let expected: [(String, String, String)] = [
            ("kill_switch", anonymous, "STATIC"), ("new_checkout", Self.venue42, "TARGETING_MATCH"), ("new_checkout", anonymous, "DEFAULT"),
        ]
        for (key, context, reason) in expected {
            let (status, body) = try Self.evaluate(server, key, body: context)
            #expect(status == 200 && body?.objectValue?["reason"]?.stringValue == reason, "\(key) \(context): \(String(describing: body))")
        }
    }

    @Test func requiredCredentialsAreAskedFor() throws {
        let server = try FlagServer(document: .seedExample, configuration: .init(requiredHeaders: ["Authorization": "Bearer t"]))
        defer { server.stop() }
        #expect(try Self.evaluate(server, "new_checkout", body: Self.venue42).0 == 401)
    }
}
