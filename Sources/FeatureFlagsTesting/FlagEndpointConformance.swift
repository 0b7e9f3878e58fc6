public import FeatureFlags
import Foundation

/// The contract every ``FlagEndpoint`` must keep, as a suite you run against your own. It
/// needs no socket: requests are checked as values and answers go through a ``FlagFetcher`` on
/// a ``StubTransport``. Use it from Swift Testing or XCTest:
///
/// ```swift
/// @Test func myEndpointConforms() async {
///     let sample = FlagEndpointConformance.Sample(
///         context: EvaluationContext(targetingKey: "user-1", attributes: ["venue": "venue-42"]),
///         body: Array(#"{"toggles":{"new_checkout":true,"limit":750}}"#.utf8),
///         expected: ["new_checkout": true, "limit": 750])
///     let report = await FlagEndpointConformance(endpoint: MyEndpoint(base: url), sample: sample).run()
///     #expect(report.failures == [])
/// }
/// ```
///
/// What it checks (each a line of ``Report/checks``):
/// - the request is an absolute `http(s)` URL, the same for the same context, different for
///   another context (unless ``Sample/contextTravels`` is false), and carries `If-None-Match`
///   exactly when given a tag (unless ``Sample/supportsConditionalRequests`` is false);
/// - the sample answer decodes to flags holding every expected value, whatever the `ETag`
///   header says;
/// - bodies that are not the format — empty, cut short, not JSON, not UTF-8, the wrong JSON
///   type, nested 10,000 deep — are errors (`PARSE_ERROR`), never flags and never a crash;
/// - errors and failure details never repeat the context's attribute values;
/// - through a fetcher: the sample is fetched with its tag and the fetch time and the
///   context's fingerprint stamped, and a conditional fetch with that tag is "not modified".
public struct FlagEndpointConformance: Sendable {
    /// A context, an answer the service could give for it, and the values it holds.
    public struct Sample: Sendable {
        /// The context asked for.
        public var context: EvaluationContext
        /// A complete 2xx body for it.
        public var body: [UInt8]
        /// Header fields of that answer (besides `ETag`, which the suite sets).
        public var headers: [String: String]
        /// Values the decoded flags must hold (others may be present).
        public var expected: [String: FlagValue]
        /// Whether the endpoint sends `If-None-Match`. Default true.
        public var supportsConditionalRequests: Bool
        /// Whether the context changes the request (false for a static file). Default true.
        public var contextTravels: Bool

        /// A sample.
        public init(
            context: EvaluationContext, body: [UInt8], headers: [String: String] = [:], expected: [String: FlagValue],
            supportsConditionalRequests: Bool = true, contextTravels: Bool = true
        ) {
            self.context = context
            self.body = body
            self.headers = headers
            self.expected = expected
            self.supportsConditionalRequests = supportsConditionalRequests
            self.contextTravels = contextTravels
        }
    }

    /// What the suite found.
    public struct Report: Sendable, CustomStringConvertible {
        /// Every check, passed or not, in the order run.
        public internal(set) var checks: [(name: String, failure: String?)] = []
        /// The failed checks, as `name: why`.
        public var failures: [String] { checks.compactMap { check in check.failure.map { "\(check.name): \($0)" } } }
        /// Whether every check passed.
        public var passed: Bool { failures.isEmpty }
        /// One line per check.
        public var description: String {
            checks.map { "\($0.failure == nil ? "✔" : "✘") \($0.name)\($0.failure.map { ": \($0)" } ?? "")" }.joined(separator: "\n")
        }

        mutating func check(_ name: String, _ failure: String?) { checks.append((name, failure)) }
    }

    /// The endpoint under test.
    public let endpoint: FlagEndpoint
    /// Its sample.
    public let sample: Sample

    /// A suite for `endpoint` with `sample`.
    public init(endpoint: FlagEndpoint, sample: Sample) {
        self.endpoint = endpoint
        self.sample = sample
    }

    /// Runs every check; never throws.
    public func run() async -> Report {
        var report = Report()
        checkName(&report)
        checkRequests(&report)
        checkDecoding(&report)
        checkHostileBodies(&report)
        await checkThroughAFetcher(&report)
        return report
    }

    /// The tag the suite's service uses.
    static let etag = "\"conformance-1\""

    private var secrets: [String] {
        sample.context.attributes.values.compactMap { value -> String? in
            guard case .string(let text) = value, text.count >= 4 else { return nil }
            return text
        }
    }

    private func leaks(_ text: String) -> String? {
        secrets.first { text.contains($0) }.map { "repeats the context value \"\($0)\"" }
    }

    private func checkName(_ report: inout Report) {
        report.check("name is a short label", endpoint.name.isEmpty || endpoint.name.count > 40 ? "\"\(endpoint.name)\"" : nil)
    }

    private func checkRequests(_ report: inout Report) {
        let plain: FlagRequest
        do {
            plain = try endpoint.request(for: sample.context, etag: nil)
        } catch {
            report.check("builds a request for the sample context", "\(error)")
            return
        }
        report.check("builds a request for the sample context", nil)
        let scheme = plain.url.scheme?.lowercased()
        report.check(
            "the URL is absolute http(s)",
            (scheme == "https" || scheme == "http") && plain.url.host != nil ? nil : "\(plain.url.absoluteString)")
        report.check(
            "no If-None-Match without a tag", header("If-None-Match", in: plain) == nil ? nil : "sent \(header("If-None-Match", in: plain) ?? "")")
        let again = try? endpoint.request(for: sample.context, etag: nil)
        report.check("the same context gives the same request", again == plain ? nil : "two requests differ")
        if sample.supportsConditionalRequests {
            let conditional = try? endpoint.request(for: sample.context, etag: Self.etag)
            let sent = conditional.flatMap { header("If-None-Match", in: $0) }
            report.check("If-None-Match carries the tag exactly", sent == Self.etag ? nil : "sent \(sent ?? "nothing")")
        }
        if sample.contextTravels {
            let other = EvaluationContext(
                targetingKey: (sample.context.targetingKey ?? "") + "-other",
                attributes: sample.context.attributes.mapValues { value in
                    if case .string(let text) = value { return .string(text + "-other") }
                    return value
                })
            let otherRequest = try? endpoint.request(for: other, etag: nil)
            report.check("another context gives another request", otherRequest != plain ? nil : "the context does not travel")
        }
    }

    private func checkDecoding(_ report: inout Report) {
        for etag in [Self.etag, nil] as [String?] {
            var headers = sample.headers
            headers["ETag"] = etag
            let name = "decodes the sample" + (etag == nil ? " without an ETag" : "")
            do {
                if let flags = try endpoint.decode(FlagResponse(status: 200, headers: headers, body: sample.body), for: sample.context).flags {
                    let wrong = sample.expected.keys.sorted().filter { flags[$0]?.value != sample.expected[$0] }
                    report.check(name, wrong.isEmpty ? nil : "wrong or missing: \(wrong.joined(separator: ", "))")
                } else {
                    report.check(name, "said \"not modified\" to a full answer")
                }
            } catch {
                report.check(name, "\(error)")
            }
        }
    }

    /// Bodies no service of any format sends as a successful answer: each must be a
    /// `PARSE_ERROR`.
    public static let hostileBodies: [(String, [UInt8])] = [
        ("an empty body", []),
        ("a cut-short object", Array(#"{"flags":{"a":"#.utf8)),
        ("HTML", Array("<html><body>502 Bad Gateway</body></html>".utf8)),
        ("bytes that are not UTF-8", [0xFF, 0xFE, 0x7B, 0x00, 0xC3]),
        ("a JSON list", Array("[1,2,3]".utf8)),
        ("a JSON string", Array(#""flags""#.utf8)),
        ("JSON null", Array("null".utf8)),
        ("nesting 10,000 deep", [UInt8](repeating: 0x5B, count: 10_000) + [UInt8](repeating: 0x5D, count: 10_000)),
    ]

    private func checkHostileBodies(_ report: inout Report) {
        for (what, body) in Self.hostileBodies {
            let name = "\(what) is a parse error"
            do {
                let decoded = try endpoint.decode(FlagResponse(status: 200, body: body), for: sample.context)
                report.check(name, "decoded to \(decoded)")
            } catch {
                let problem = error.code == .parseError ? leaks(error.message) : "code \(error.code.rawValue), not PARSE_ERROR"
                report.check(name, problem)
            }
        }
        let detail = endpoint.failureDetail(FlagResponse(status: 500, body: Array(#"{"error":"x","errorDetails":"y"}"#.utf8)))
        let garbage = endpoint.failureDetail(FlagResponse(status: 500, body: [0xFF, 0x00]))
        let long = [detail, garbage].compactMap { $0 }.first { $0.count > 500 }
        report.check("failure details are short and never crash", long == nil ? nil : "\(long?.count ?? 0) characters")
    }

    private func checkThroughAFetcher(_ report: inout Report) async {
        let transport = StubTransport.serving(body: sample.body, etag: Self.etag, headers: sample.headers)
        let fetchedAt = Date(timeIntervalSince1970: 1_750_000_000)
        // The stub answers at once; the generous budget only keeps a loaded machine (a CI runner
        // under ThreadSanitizer) from turning these checks into timeouts.
        let fetcher = FlagFetcher(endpoint: endpoint, configuration: .init(budget: .seconds(30)), transport: transport, now: { fetchedAt })
        defer { fetcher.shutdown() }
        let first = await fetcher.fetch(sample.context)
        guard case .fetched(let snapshot, let etag, _) = first else {
            report.check("fetches the sample through a FlagFetcher", "\(first)")
            return
        }
        let stamped = snapshot.fetchedAt == fetchedAt && snapshot.contextFingerprint == sample.context.fingerprint
        report.check("fetches the sample through a FlagFetcher", stamped ? nil : "fetch time or fingerprint not stamped")
        report.check("keeps the service's tag", etag?.value == Self.etag ? nil : "tag \(etag?.value ?? "none")")
        guard sample.supportsConditionalRequests else { return }
        let second = await fetcher.fetch(sample.context, ifNoneMatch: etag)
        report.check("a conditional fetch with that tag is not modified", second == .notModified ? nil : "\(second)")
    }

    private func header(_ name: String, in request: FlagRequest) -> String? {
        request.headers.first { $0.key.lowercased() == name.lowercased() }?.value
    }
}
