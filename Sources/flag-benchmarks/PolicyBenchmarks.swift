import FeatureFlags
import FlagServer
import Foundation

/// Validation before activation and merging contexts.
enum PolicyBenchmarks {
    static func run(_ report: Report, quick: Bool) throws {
        report.section("Validation and merge — a 1,000-flag payload")
        let runs = quick ? 9 : 25
        let flags = sampleFlags(1_000)
        let schema = try FlagSchema(parsing: schemaDocument(for: flags))
        let context = EvaluationContext(targetingKey: "bench")
        let document = FlagDocument(version: "bench", ttl: 300, flags: flags)
        let response = FlagResponse(status: 200, headers: ["ETag": "\"bench\""], body: document.jsonBytes())
        let endpoint = FlagEndpoint.json(post: URL(fileURLWithPath: "/"))
        guard let decodedFlags = (try? endpoint.decode(response, for: context))?.flags else {
            throw BenchmarkError("the JSON endpoint did not decode its own document")
        }
        let snapshot = FlagSnapshot(flags: decodedFlags)
        guard schema.validate(snapshot.flags).isValid else { throw BenchmarkError("the sample breaks its own schema") }

        let decode = Harness.measure(operations: 1, runs: runs) { _ in
            blackHole(try? endpoint.decode(response, for: context))
        }
        report.add(.init(section: "policy", name: "floor: decode the payload (json endpoint)", value: decode.median / 1_000, unit: "µs", spread: decode.spread))

        let validate = Harness.measure(operations: 1, runs: runs) { _ in blackHole(schema.validate(snapshot.flags)) }
        report.add(
            .init(
                section: "policy", name: "validate it against 1,000 rules", value: validate.median / 1_000, unit: "µs",
                spread: validate.spread, floor: "decode", ratio: validate.median / decode.median,
                budget: "< decode", passed: validate.median < decode.median))

        let personal = EvaluationContext(targetingKey: "bench", attributes: ["plan_tier": "personal"])
        let business = EvaluationContext(targetingKey: "bench", attributes: ["plan_tier": "business"])
        let merge = ContextMerge.seedPlans
        let identity = ContextMerge.identity(of: [business, personal])
        let merged = Harness.measure(operations: 1, runs: runs) { _ in
            blackHole(merge.merge([(business, snapshot), (personal, snapshot)], killSwitchKey: "kill_switch", identity: identity))
        }
        report.add(
            .init(
                section: "policy", name: "merge two contexts' 1,000 flags (top tier)", value: merged.median / 1_000, unit: "µs",
                spread: merged.spread, floor: "decode", ratio: merged.median / decode.median))
    }

    /// A rule per sample flag, with the constraints its type allows.
    private static func schemaDocument(for flags: [String: FlagEntry]) -> FlagValue {
        var rules: [String: FlagValue] = [:]
        for (name, entry) in flags {
            switch entry.value {
            case .bool?: rules[name] = ["type": "bool", "required": true]
            case .string?: rules[name] = ["type": "string", "minLength": 1, "maxLength": 64]
            case .int?: rules[name] = ["type": "int", "min": 0, "max": 1_000_000]
            case .double?: rules[name] = ["type": "double", "min": 0]
            default: rules[name] = ["type": "list", "maxItems": 20, "items": ["type": "string", "maxLength": 40]]
            }
        }
        return ["flags": .object(rules)]
    }
}
