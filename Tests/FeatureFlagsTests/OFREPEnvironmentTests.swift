import FeatureFlagsServices
import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FlagServer

/// OFREP's settings from environment variables (OFREP ADR-0007): the header algorithm of its
/// amendment, the endpoint and timeout, what cannot be used, and code winning over the
/// environment — then a fetch over loopback that sends what the variables say.
@Suite("OFREP settings from the environment")
struct OFREPEnvironmentTests {
    @Test func theADRsExampleIsRead() {
        let settings = OFREPEnvironment(["OFREP_HEADERS": "Authorization=Bearer%20token,X-Custom=value"])
        #expect(settings.headers == ["Authorization": "Bearer token", "X-Custom": "value"])
        #expect(settings.problems.isEmpty)
        #expect(settings.baseURL == nil)
        #expect(settings.timeout == nil)
    }

    @Test func namesAndValuesAreTrimmedAndSplitAtTheFirstEquals() {
        let settings = OFREPEnvironment(["OFREP_HEADERS": "  X-Key = a=b=c ,Accept-Language=de%3Dch"])
        #expect(settings.headers == ["X-Key": "a=b=c", "Accept-Language": "de=ch"])
        #expect(settings.problems.isEmpty)
    }

    @Test func commasAlwaysSeparateEvenWhenEncoded() {
        let settings = OFREPEnvironment(["OFREP_HEADERS": "A=x%2CB=y"])
        #expect(settings.headers == ["A": "x", "B": "y"])
    }

    @Test func eachMalformedEntryIsLeftOutWithAProblemThatShowsNoValue() {
        let raw = "=sec1, noequals ,Bad Name=sec5,Empty=,Ctl=sec%0A7, ,Good=sec8,good=sec9"
        let settings = OFREPEnvironment(["OFREP_HEADERS": raw])
        #expect(settings.headers == ["good": "sec9"])
        #expect(settings.problems.count == 7, "\(settings.problems)")
        #expect(settings.problems.allSatisfy { $0.hasPrefix("OFREP_HEADERS entry ") })
        #expect(settings.problems.contains { $0.hasPrefix("OFREP_HEADERS entry 1 has no name") })
        #expect(settings.problems.contains { $0.hasPrefix("OFREP_HEADERS entry 2 has no '='") })
        #expect(settings.problems.contains { $0.contains("entry 3") && $0.contains("not a header name") && !$0.contains("Bad Name") })
        #expect(settings.problems.contains { $0.contains("entry 4 (Empty) has an empty value") })
        #expect(settings.problems.contains { $0.contains("entry 5 (Ctl)") && $0.contains("control character") })
        #expect(settings.problems.contains { $0.hasPrefix("OFREP_HEADERS entry 6 has no '='") })
        #expect(settings.problems.contains { $0.contains("entry 8 names good again") })
        #expect(!settings.problems.contains { $0.contains("sec") }, "a header's value is never shown")
        // A credential written as `Name: value`, split at its base64 padding, is not shown either.
        let colon = OFREPEnvironment(["OFREP_HEADERS": "Authorization: Basic c2VjcmV0=="])
        #expect(colon.headers.isEmpty)
        #expect(colon.problems.count == 1)
        #expect(!colon.problems[0].contains("c2VjcmV0") && !colon.problems[0].contains("Basic"), "\(colon.problems)")
    }

    @Test func badPercentEncodingUsesNoHeader() {
        let settings = OFREPEnvironment(["OFREP_HEADERS": "A=ok,B=%zz"])
        #expect(settings.headers.isEmpty)
        #expect(settings.problems == ["OFREP_HEADERS is not valid percent-encoding; no header of it is used"])
    }

    @Test func theEndpointIsAnAbsoluteWebURL() {
        #expect(OFREPEnvironment(["OFREP_ENDPOINT": " http://127.0.0.1:2321 "]).baseURL == URL(string: "http://127.0.0.1:2321"))
        #expect(OFREPEnvironment(["OFREP_ENDPOINT": "https://flags.example.com/base"]).baseURL == URL(string: "https://flags.example.com/base"))
        for bad in ["ftp://flags.example.com", "localhost:2321", "/ofrep", "http://", "not a url"] {
            let settings = OFREPEnvironment(["OFREP_ENDPOINT": bad])
            #expect(settings.baseURL == nil, "\(bad)")
            #expect(settings.problems == ["OFREP_ENDPOINT is not an absolute http or https URL; it is not used"], "\(bad)")
        }
        let empty = OFREPEnvironment(["OFREP_ENDPOINT": "", "OFREP_HEADERS": "", "OFREP_TIMEOUT_MS": ""])
        #expect(empty == OFREPEnvironment([:]))
        #expect(empty.problems.isEmpty)
    }

    @Test func theTimeoutIsWholeMillisecondsAboveZero() {
        #expect(OFREPEnvironment(["OFREP_TIMEOUT_MS": "1500"]).timeout == .milliseconds(1500))
        #expect(OFREPEnvironment(["OFREP_TIMEOUT_MS": " 250 "]).timeout == .milliseconds(250))
        for bad in ["0", "-5", "1.5", "5s", "abc", "99999999999999999999", "٣"] {
            let settings = OFREPEnvironment(["OFREP_TIMEOUT_MS": bad])
            #expect(settings.timeout == nil, "\(bad)")
            #expect(settings.problems.count == 1, "\(bad)")
        }
    }

    @Test func settingsInCodeWinOverTheEnvironment() throws {
        let settings = OFREPEnvironment([
            "OFREP_ENDPOINT": "https://env.example.com", "OFREP_HEADERS": "Authorization=Bearer env,X-Env=1",
        ])
        let context = EvaluationContext(targetingKey: "user-1")
        let fromCode = try #require(settings.endpoint(baseURL: URL(string: "https://code.example.com")!, headers: ["authorization": "Bearer code"]))
        let request = try fromCode.request(for: context, etag: nil)
        #expect(request.url.host == "code.example.com")
        #expect(request.headers["authorization"] == "Bearer code")
        #expect(request.headers["Authorization"] == nil, "one field, as the code spells it")
        #expect(request.headers["X-Env"] == "1")
        let fromEnvironment = try #require(settings.endpoint())
        #expect(try fromEnvironment.request(for: context, etag: nil).url.absoluteString == "https://env.example.com/ofrep/v1/evaluate/flags")
        #expect(OFREPEnvironment([:]).endpoint() == nil, "no service named")
    }

    /// The variables, as a deployment sets them, reach a real OFREP service over loopback.
    @Test func aFetchSendsWhatTheVariablesSay() async throws {
        let server = try FlagServer(document: .seedExample)
        defer { server.stop() }
        let settings = OFREPEnvironment([
            "OFREP_ENDPOINT": server.baseURL.absoluteString, "OFREP_HEADERS": "Authorization=Bearer%20s3cret,X-Team=pos",
            // The loopback budget every fetching test has (a loaded machine under TSan took 28 s).
            "OFREP_TIMEOUT_MS": String(TestTiming.loopbackBudget.components.seconds * 1000),
        ])
        #expect(settings.problems.isEmpty)
        let fetcher = FlagFetcher(
            endpoint: try #require(settings.endpoint()), configuration: .init(budget: try #require(settings.timeout)))
        defer { fetcher.shutdown() }
        let answer = try #require(fetched(await fetcher.fetch(auraPersonal)))
        #expect(answer.snapshot.flags["plan_themeColor"]?.value == "#3498DB")
        let request = try #require(server.requests.first)
        #expect(request.path.hasSuffix("/ofrep/v1/evaluate/flags"))
        #expect(request.headers["authorization"] == "Bearer s3cret")
        #expect(request.headers["x-team"] == "pos")
    }
}
