import FeatureFlags
import FeatureFlagsServices
import FlagServer
import Foundation

/// Cold start (fallback file → first read) and payload decoding.
enum StartupBenchmarks {
    private struct Document: Decodable {
        let flags: [String: FlagValue]
    }

    static func run(_ report: Report, quick: Bool) throws {
        report.section("Cold start — fallback file to the first flag read (page cache warm)")
        let directory = temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let runs = quick ? 9 : 25
        for count in [1_000, 10_000] {
            let context = EvaluationContext(targetingKey: "bench")
            let file = directory.appendingPathComponent("flags-\(count).lkg")
            let flags = sampleFlags(count)
            try LastKnownGoodStore(fileURL: file).save(FlagSnapshot(flags: flags, version: "bench"), etag: nil, for: context)
            let size = try FileIO.read(file.path).count
            let label = count == 1_000 ? "1,000" : "10,000"

            let floor = Harness.measure(operations: 1, runs: runs) { _ in blackHole(try? FileIO.read(file.path)) }
            report.add(.init(section: "cold-start", name: "floor: read the \(label)-flag file's bytes (\(size / 1_000) KB)", value: floor.median / 1_000, unit: "µs", spread: floor.spread))

            let cold = Harness.measure(operations: 1, runs: runs) { _ in
                let client = FallbackClient(fileURL: file, context: context)
                blackHole(client.bool("feature_flag_0", default: false))
            }
            let coldMs = cold.median / 1_000_000
            report.add(
                .init(
                    section: "cold-start", name: "FallbackClient init + first read, \(label) flags", value: cold.median / 1_000, unit: "µs",
                    spread: cold.spread, floor: "file read", ratio: cold.median / floor.median,
                    budget: count == 1_000 ? "< 1 ms" : nil, passed: count == 1_000 ? coldMs < 1 : nil))

            let json = Data(FlagDocument(version: "bench", flags: flags).jsonBytes())
            let decoder = Harness.measure(operations: 1, runs: runs) { _ in
                blackHole(try? JSONDecoder().decode(Document.self, from: json))
            }
            report.add(
                .init(
                    section: "cold-start", name: "JSONDecoder of the same flags as JSON (\(json.count / 1_000) KB)", value: decoder.median / 1_000,
                    unit: "µs", spread: decoder.spread, floor: "our cold start", ratio: decoder.median / cold.median))
        }

        report.section("Decode — a 1,000-flag payload, per endpoint")
        let document = FlagDocument(version: "bench", ttl: 300, flags: sampleFlags(1_000))
        let payload = document.jsonBytes()
        let context = EvaluationContext(targetingKey: "bench")
        let base = URL(fileURLWithPath: "/")
        let endpoints: [(String, FlagEndpoint, WireFormat)] = [
            ("json (FeatureFlags document)", FlagEndpoint.json(post: base), .json),
            ("ofrep", FlagEndpoint.ofrep(baseURL: base), .ofrep),
            ("launchdarkly", FlagEndpoint.launchDarkly(mobileKey: "m", baseURL: base), .launchDarkly(withReasons: true)),
            ("firebase", FlagEndpoint.firebaseRemoteConfig(projectID: "p", apiKey: "k", appID: "a", appInstanceID: "i", baseURL: base), .firebase),
            ("unleash", FlagEndpoint.unleash(baseURL: base, clientKey: "k"), .unleash),
        ]
        let reference = Harness.measure(operations: 1, runs: runs) { _ in
            blackHole(try? JSONDecoder().decode(Document.self, from: Data(payload)))
        }
        report.add(.init(section: "decode", name: "reference: JSONDecoder into [String: FlagValue]", value: reference.median / 1_000, unit: "µs", spread: reference.spread))
        for (name, endpoint, format) in endpoints {
            let body = format.render(document)
            let response = FlagResponse(status: 200, headers: ["ETag": "\"bench\""], body: body)
            guard (try? endpoint.decode(response, for: context))?.flags != nil else {
                throw BenchmarkError("\(name) did not decode its own format")
            }
            let stats = Harness.measure(operations: 1, runs: runs) { _ in
                blackHole(try? endpoint.decode(response, for: context))
            }
            report.add(
                .init(
                    section: "decode", name: "\(name), \(body.count / 1_000) KB", value: stats.median / 1_000, unit: "µs", spread: stats.spread,
                    floor: "JSONDecoder", ratio: stats.median / reference.median))
        }
    }
}
