import FeatureFlagsServices
import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FlagServer
import FeatureFlagsTesting

/// One flag service as the contract tests see it: how to reach it on a FlagServer, which
/// credentials it needs, and under which name a document flag arrives.
struct ServiceCase: CustomStringConvertible, Sendable {
    let description: String
    /// The header FlagServer demands, and its right value.
    let credential: (name: String, value: String)
    let make: @Sendable (_ server: FlagServer, _ credential: String) -> FlagEndpoint
    /// Unleash carries non-Boolean values as `name.payload`.
    var payloadSuffix = ""

    func name(_ flag: String, isBool: Bool) -> String { isBool ? flag : flag + payloadSuffix }

    static let all: [ServiceCase] = [
        ServiceCase(description: "json", credential: ("Authorization", "Bearer json-token")) { server, token in
            FlagEndpoint.json(post: server.flagsURL, headers: ["Authorization": token])
        },
        ServiceCase(description: "ofrep", credential: ("Authorization", "Bearer ofrep-token")) { server, token in
            FlagEndpoint.ofrep(baseURL: server.baseURL, headers: ["Authorization": token])
        },
        ServiceCase(description: "launchdarkly", credential: ("Authorization", "api_key mob-123")) { server, token in
            FlagEndpoint.launchDarkly(mobileKey: String(token.dropFirst("api_key ".count)), baseURL: server.baseURL)
        },
        ServiceCase(description: "launchdarkly-report", credential: ("Authorization", "api_key mob-123")) { server, token in
            FlagEndpoint.launchDarkly(mobileKey: String(token.dropFirst("api_key ".count)), baseURL: server.baseURL, useReport: true)
        },
        ServiceCase(description: "firebase", credential: ("X-Goog-Api-Key", "AIza-key")) { server, key in
            FlagEndpoint.firebaseRemoteConfig(
                projectID: "508767403424", apiKey: key, appID: "1:508767403424:ios:abc", appInstanceID: "install-1",
                baseURL: server.baseURL)
        },
        ServiceCase(description: "unleash", credential: ("Authorization", "default:development.unleash-key"), make: { server, key in
            FlagEndpoint.unleash(baseURL: server.baseURL, clientKey: key, appName: "pos", environment: "development")
        }, payloadSuffix: ".payload"),
    ]
}

/// The same behaviour from every provider over real loopback: happy path, 304, auth
/// failures, rate limits, malformed bodies, context changes.
@Suite("Every provider, one contract")
struct ProviderContractTests {
    private func setUp(_ service: ServiceCase, credential: String? = nil) throws -> (FlagServer, FlagFetcher) {
        let server = try FlagServer(
            document: .seedExample,
            configuration: .init(requiredHeaders: [service.credential.name: service.credential.value]))
        let client = FlagFetcher(endpoint: service.make(server, credential ?? service.credential.value), configuration: .loopback)
        return (server, client)
    }

    private func read(_ service: ServiceCase, _ snapshot: FlagSnapshot) -> (theme: String, limit: Int, features: [String], support: Bool, checkout: Bool) {
        let client = InMemorySnapshot(snapshot)
        return (
            client.value(FlagKey(service.name("plan_themeColor", isBool: false), default: "-")),
            client.value(FlagKey(service.name("plan_data_limit", isBool: false), default: -1)),
            client.value(FlagKey(service.name("plan_feature_list", isBool: false), default: [String]())),
            client.value(FlagKey(service.name("plan_priority_support", isBool: true), default: false)),
            client.value(FlagKey(service.name("new_checkout", isBool: true), default: false))
        )
    }

    @Test(arguments: ServiceCase.all)
    func happyPathThenNotModified(_ service: ServiceCase) async throws {
        let (server, client) = try setUp(service)
        defer { server.stop(); client.shutdown() }
        let first = try #require(snapshot(of: await client.fetch(auraBusiness)))
        let values = read(service, first)
        #expect(values.theme == "#2C3E50")
        #expect(values.limit == 750)
        #expect(values.features.contains("team"))
        #expect(values.support == true)
        #expect(values.checkout == false)
        #expect(first.contextFingerprint == auraBusiness.fingerprint)
        let etag = try #require(fetched(await client.fetch(auraBusiness))?.etag)
        #expect(await client.fetch(auraBusiness, ifNoneMatch: etag) == .notModified)
        #expect(server.requests.map(\.status) == [200, 200, 304])
    }

    /// The kill switch on the server kills through every service's form — Firebase's text
    /// `"true"` included — and off is off.
    @Test(arguments: ServiceCase.all)
    func theKillSwitchKillsThroughEveryService(_ service: ServiceCase) async throws {
        let (server, client) = try setUp(service)
        defer { server.stop(); client.shutdown() }
        let name = service.name("kill_switch", isBool: true)
        var killed = ServerDocument.seedExample
        killed.base.flags["kill_switch"] = FlagEntry(value: true)
        server.document = killed
        let on = try #require(snapshot(of: await client.fetch(auraBusiness)))
        #expect(on.isKillSwitchOn(key: name), "\(String(describing: on.flags[name]))")
        killed.base.flags["kill_switch"] = FlagEntry(value: false)
        server.document = killed
        let off = try #require(snapshot(of: await client.fetch(auraBusiness)))
        #expect(!off.isKillSwitchOn(key: name), "\(String(describing: off.flags[name]))")
    }

    @Test(arguments: ServiceCase.all)
    func contextChanges(_ service: ServiceCase) async throws {
        let (server, client) = try setUp(service)
        defer { server.stop(); client.shutdown() }
        let personal = try #require(snapshot(of: await client.fetch(auraPersonal)))
        #expect(read(service, personal).theme == "#3498DB")
        let zenith = EvaluationContext(targetingKey: "user-9", venue: "venue-42", partner: "zenithsat", planTier: "business")
        let other = try #require(snapshot(of: await client.fetch(zenith)))
        #expect(read(service, other).theme == "#6C3483")
        #expect(read(service, other).checkout == true, "the venue rule applies")
    }

    @Test(arguments: ServiceCase.all)
    func authFailuresAreFatal(_ service: ServiceCase) async throws {
        let (server, client) = try setUp(service, credential: "wrong")
        defer { server.stop(); client.shutdown() }
        let error = await fetchError(client, auraPersonal)
        guard let status = error?.httpStatus else {
            Issue.record("expected an HTTP status, got \(String(describing: error))")
            return
        }
        #expect(status == 403 || (status == 401 && service.description == "launchdarkly"))
        #expect(error?.isFatal == true)
        #expect(error?.description.contains("wrong") == false, "credentials never in errors")
    }

    @Test(arguments: ServiceCase.all)
    func rateLimitsCarryRetryAfter(_ service: ServiceCase) async throws {
        let (server, client) = try setUp(service)
        defer { server.stop(); client.shutdown() }
        server.fault = .status(429, retryAfter: "120")
        let error = await fetchError(client, auraPersonal)
        #expect(error?.httpStatus == 429)
        #expect(error?.retryAfter == 120)
    }

    @Test(arguments: ServiceCase.all)
    func malformedBodiesAreDecodeErrors(_ service: ServiceCase) async throws {
        let (server, client) = try setUp(service)
        defer { server.stop(); client.shutdown() }
        for body in ["<html>", "[]", #"{"flags":"nope","toggles":"nope","entries":7,"state":"WEIRD"}"#] {
            server.fault = .body(Array(body.utf8))
            let error = await fetchError(client, auraPersonal)
            guard let e = error?.endpointError, error?.kind == .decode else {
                Issue.record("\(service) accepted \(body): \(String(describing: error))")
                continue
            }
            #expect(e.code == .parseError)
        }
    }
}

/// A client over one snapshot, for reading typed values out of a fetch result.
func InMemorySnapshot(_ snapshot: FlagSnapshot) -> any FeatureFlagClient {
    let client = InMemoryFlagClient()
    for (name, entry) in snapshot.flags { client.set(name, entry: entry) }
    return client
}
