import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import TestSupport
@testable import FeatureFlags
import FlagServer

/// A redirect to another origin does not carry the app's credentials there: URLSession copies
/// every header field to the redirected request, whatever its origin.
@Suite("Redirect credentials")
struct RedirectCredentialTests {
    static let fields = [
        "Authorization": "Bearer s3cret", "X-API-Key": "k3y", "UNLEASH-APPNAME": "shop", "Accept": "application/json",
        "Content-Type": "application/json", "If-None-Match": "\"v1\"", "Last-Event-ID": "7",
    ]

    /// The request a redirect from `from` to `to` is sent as.
    func redirected(from: String, to: String) -> [String: String] {
        var original = URLRequest(url: URL(string: from)!)
        for (name, value) in Self.fields { original.setValue(value, forHTTPHeaderField: name) }
        var next = original
        next.url = URL(string: to)!
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        let task = session.dataTask(with: original)
        let transport = URLSessionTransport()
        defer { transport.shutdown() }
        return transport.credentialsLeftBehind(in: next, redirecting: task).allHTTPHeaderFields ?? [:]
    }

    @Test(arguments: [
        "https://flags.example.com/v2/flags", "https://FLAGS.example.com:443/other", "https://flags.example.com/flags?page=2",
    ])
    func aRedirectWithinTheOriginKeepsEveryField(to target: String) {
        let kept = redirected(from: "https://flags.example.com/flags", to: target)
        #expect(kept.count == Self.fields.count)
        #expect(kept["Authorization"] == "Bearer s3cret")
    }

    @Test(arguments: [
        "https://cdn.example.net/flags",  // another host
        "https://flags.example.com:8443/flags",  // another port
        "http://flags.example.com/flags",  // another scheme (refused by the HTTPS rule anyway, off loopback)
        "https://example.com/flags",  // a parent domain is another origin too
        "urn:flags",  // no origin to compare: left behind as well
    ])
    func aRedirectToAnotherOriginKeepsOnlyTheExchangesOwnFields(to target: String) {
        let kept = redirected(from: "https://flags.example.com/flags", to: target)
        #expect(Set(kept.keys.map { $0.lowercased() }) == ["accept", "content-type", "if-none-match", "last-event-id"])
        #expect(!kept.values.contains("Bearer s3cret") && !kept.values.contains("k3y") && !kept.values.contains("shop"))
    }

    /// Over loopback, through URLSession: the flag service answers 307 to a host on another port
    /// (another origin), which records what it received.
    @Test func aFetchRedirectedToAnotherOriginSendsItNoCredentials() async throws {
        let elsewhere = try LaunchDarklyStandIn(flags: "{}")
        defer { elsewhere.stop() }
        let (server, fetcher, _) = try makeServerAndFetcher(headers: ["Authorization": "Bearer s3cret", "X-API-Key": "k3y"])
        defer { server.stop(); fetcher.shutdown() }
        server.fault = .redirect(status: 307, location: elsewhere.baseURL.appendingPathComponent("moved").absoluteString)
        _ = await fetcher.fetch(auraPersonal)  // the other host answers 404: only what it received matters
        #expect(server.requests.first?.headers["authorization"] == "Bearer s3cret", "the flag service's own origin gets them")
        let received = try #require(elsewhere.requests.first)
        #expect(received.path == "/moved" && received.method == "POST", "a 307 keeps the method")
        #expect(received.authorization == nil)
    }

    @Test func aFetchRedirectedWithinItsOriginKeepsItsCredentials() async throws {
        // A second path on the same host and port (the fault applies to flag requests only; this
        // one is answered 404, and recorded).
        let (server, fetcher, _) = try makeServerAndFetcher(headers: ["Authorization": "Bearer s3cret"])
        defer { server.stop(); fetcher.shutdown() }
        server.fault = .redirect(status: 307, location: server.baseURL.appendingPathComponent("elsewhere").absoluteString)
        _ = await fetcher.fetch(auraPersonal)
        let second = server.requests.dropFirst().first
        #expect(second?.path == "/elsewhere")
        #expect(second?.headers["authorization"] == "Bearer s3cret")
    }
}
