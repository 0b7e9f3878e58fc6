import FeatureFlagsServices
import Foundation
import Testing
import TestSupport
import FeatureFlags
import FeatureFlagsTesting
import FlagServer

/// The kit for extenders: every endpoint we ship passes the conformance suite, endpoints that
/// break the contract are caught, and the stub transport behaves like a transport.
@Suite("Conformance kit for endpoints")
struct ConformanceKitTests {
    static let context = EvaluationContext(targetingKey: "user-1", attributes: ["venue": "venue-42", "plan": "business"])
    static let document = FlagDocument(version: "v7", ttl: 60, flags: ["new_checkout": FlagEntry(value: true), "limit": FlagEntry(value: 750)])
    static let base = URL(string: "https://flags.example.com")!

    struct Shipped: CustomStringConvertible, Sendable {
        let description: String
        let endpoint: FlagEndpoint
        let format: WireFormat
        let expected: [String: FlagValue]
        /// False for a static document: the same request for every context.
        var contextTravels = true
    }

    static let shipped: [Shipped] = [
        Shipped(description: "json", endpoint: .json(post: base.appendingPathComponent("flags")), format: .json, expected: ["new_checkout": true, "limit": 750]),
        Shipped(description: "json static", endpoint: .json(get: URL(string: "https://cdn.example.com/flags.json")!), format: .json, expected: ["new_checkout": true, "limit": 750], contextTravels: false),
        Shipped(description: "json template", endpoint: .json(urlTemplate: "https://cdn.example.com/flags/{venue}.json"), format: .json, expected: ["new_checkout": true, "limit": 750]),
        Shipped(description: "ofrep", endpoint: .ofrep(baseURL: base), format: .ofrep, expected: ["new_checkout": true, "limit": 750]),
        Shipped(description: "launchdarkly", endpoint: .launchDarkly(mobileKey: "mob-1", baseURL: base), format: .launchDarkly(withReasons: true), expected: ["new_checkout": true, "limit": 750]),
        Shipped(
            description: "firebase", endpoint: .firebaseRemoteConfig(projectID: "p", apiKey: "k", appID: "1:p:ios:a", appInstanceID: "i", baseURL: base),
            format: .firebase, expected: ["new_checkout": "true", "limit": "750"]),
        Shipped(description: "unleash", endpoint: .unleash(baseURL: base, clientKey: "k"), format: .unleash, expected: ["new_checkout": true]),
    ]

    @Test(arguments: shipped)
    func everyShippedEndpointConforms(_ shipped: Shipped) async {
        let sample = FlagEndpointConformance.Sample(
            context: Self.context, body: shipped.format.render(Self.document), expected: shipped.expected, contextTravels: shipped.contextTravels)
        let report = await FlagEndpointConformance(endpoint: shipped.endpoint, sample: sample).run()
        #expect(report.failures == [], "\(report)")
        #expect(report.checks.count >= 20)
    }

    // MARK: Endpoints that break the contract

    /// Accepts anything: garbage becomes an empty set of flags.
    struct Lenient: EndpointFormat {
        var name: String { "lenient" }
        func request(for context: EvaluationContext, etag: String?) throws(FlagError) -> FlagRequest {
            try FlagEndpoint.json(post: ConformanceKitTests.base).request(for: context, etag: etag)
        }
        func decode(_ response: FlagResponse, for context: EvaluationContext) throws(FlagError) -> DecodedFlags {
            (try? FlagEndpoint.json(post: ConformanceKitTests.base).decode(response, for: context)) ?? .flags([:])
        }
    }

    /// Asks for the same flags whoever asks, and forgets the tag.
    struct Blind: EndpointFormat {
        var name: String { "blind" }
        func request(for context: EvaluationContext, etag: String?) throws(FlagError) -> FlagRequest {
            FlagRequest(url: ConformanceKitTests.base)
        }
        func decode(_ response: FlagResponse, for context: EvaluationContext) throws(FlagError) -> DecodedFlags {
            try FlagEndpoint.json(post: ConformanceKitTests.base).decode(response, for: context)
        }
    }

    /// Puts the context's values into its errors.
    struct Leaky: EndpointFormat {
        var name: String { "leaky" }
        func request(for context: EvaluationContext, etag: String?) throws(FlagError) -> FlagRequest {
            try FlagEndpoint.json(post: ConformanceKitTests.base).request(for: context, etag: etag)
        }
        func decode(_ response: FlagResponse, for context: EvaluationContext) throws(FlagError) -> DecodedFlags {
            do {
                return try FlagEndpoint.json(post: ConformanceKitTests.base).decode(response, for: context)
            } catch {
                throw FlagError(.parseError, "cannot read flags for venue \(context.string("venue") ?? "")")
            }
        }
    }

    /// Says "not modified" to everything.
    struct Lazy: EndpointFormat {
        var name: String { "lazy" }
        func request(for context: EvaluationContext, etag: String?) throws(FlagError) -> FlagRequest {
            try FlagEndpoint.json(post: ConformanceKitTests.base).request(for: context, etag: etag)
        }
        func decode(_ response: FlagResponse, for context: EvaluationContext) throws(FlagError) -> DecodedFlags { .notModified }
    }

    func failures(_ endpoint: FlagEndpoint) async -> [String] {
        let sample = FlagEndpointConformance.Sample(context: Self.context, body: Self.document.jsonBytes(), expected: ["new_checkout": true])
        return await FlagEndpointConformance(endpoint: endpoint, sample: sample).run().failures
    }

    @Test func garbageAcceptedAsFlagsIsCaught() async {
        let found = await failures(FlagEndpoint(Lenient()))
        #expect(found.contains { $0.hasPrefix("an empty body is a parse error: decoded to") })
        #expect(found.contains { $0.hasPrefix("HTML is a parse error") })
        #expect(found.count == FlagEndpointConformance.hostileBodies.count)
    }

    @Test func aRequestThatIgnoresTheContextAndTheTagIsCaught() async {
        let found = await failures(FlagEndpoint(Blind()))
        #expect(found.contains("another context gives another request: the context does not travel"))
        #expect(found.contains("If-None-Match carries the tag exactly: sent nothing"))
        #expect(found.contains { $0.hasPrefix("a conditional fetch with that tag is not modified") })
    }

    @Test func contextValuesInErrorsAreCaught() async {
        let found = await failures(FlagEndpoint(Leaky()))
        #expect(found.contains("HTML is a parse error: repeats the context value \"venue-42\""))
    }

    @Test func notModifiedToAFullAnswerIsCaught() async {
        let found = await failures(FlagEndpoint(Lazy()))
        #expect(found.contains("decodes the sample: said \"not modified\" to a full answer"))
        #expect(found.contains { $0.hasPrefix("fetches the sample through a FlagFetcher") })
    }

    // MARK: StubTransport

    @Test func theStubRecordsAnswersConditionallyAndLimitsSize() async throws {
        let body = Self.document.jsonBytes()
        let transport = StubTransport.serving(body: body, etag: "\"d1\"")
        // The generous test budget: a stub answers at once, but a loaded machine under
        // ThreadSanitizer once took longer than the default 2 s to run the fetch's tasks.
        let fetcher = FlagFetcher(endpoint: .json(post: Self.base), configuration: .loopback, transport: transport)
        guard case .fetched(let snapshot, let etag, _) = await fetcher.fetch(Self.context) else {
            Issue.record("expected flags")
            return
        }
        #expect(snapshot.flags["limit"]?.value == 750 && snapshot.version == "v7" && snapshot.ttl == 60)
        #expect(await fetcher.fetch(Self.context, ifNoneMatch: etag) == .notModified)
        #expect(transport.requests.count == 2)
        #expect(transport.requests.last?.headers["If-None-Match"] == "\"d1\"")
        let small = FlagFetcher(
            endpoint: .json(post: Self.base), configuration: .init(budget: TestTiming.loopbackBudget, maxResponseBytes: 10),
            transport: transport)
        #expect(await small.fetch(Self.context) == .failed(.payloadTooLarge(limit: 10)))
        transport.shutdown()
        #expect(await fetcher.fetch(Self.context) == .failed(.cancelled))
        #expect(transport.requests.count == 3, "refused requests are not recorded")
    }

    @Test func theStubGivesResponsesInOrderAndFailuresToo() async {
        let transport = StubTransport(responses: [FlagResponse(status: 503), FlagResponse(status: 200, body: Self.document.jsonBytes())])
        let fetcher = FlagFetcher(endpoint: .json(post: Self.base), configuration: .loopback, transport: transport)
        #expect(await fetcher.fetch(Self.context) == .failed(.httpStatus(503)))
        #expect(snapshotValue(await fetcher.fetch(Self.context)) == 750)
        #expect(snapshotValue(await fetcher.fetch(Self.context)) == 750, "the last response repeats")
        let failing = StubTransport { _ throws(FetchError) in throw .offline("no route") }
        #expect(
            await FlagFetcher(endpoint: .json(post: Self.base), configuration: .loopback, transport: failing).fetch(Self.context)
                == .failed(.offline("no route")))
        let empty = StubTransport(responses: [])
        #expect(await FlagFetcher(endpoint: .json(post: Self.base), configuration: .loopback, transport: empty).fetch(Self.context)
            == .failed(.transport("StubTransport has no response to give")))
    }

    private func snapshotValue(_ result: FetchResult) -> FlagValue? {
        if case .fetched(let snapshot, _, _) = result { return snapshot.flags["limit"]?.value }
        return nil
    }
}
