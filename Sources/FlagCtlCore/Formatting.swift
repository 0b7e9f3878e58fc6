import FeatureFlags
import FeatureFlagsUI
import Foundation

/// Shared pieces of command output.
enum Formatting {
    /// `12s`, `4m`, `3h`, `2d`.
    static func age(_ seconds: TimeInterval?) -> String { FlagText.age(seconds) }

    /// Left-aligned columns.
    static func table(_ rows: [[String]]) -> [String] { FlagText.columns(rows) }

    /// `text` safe for a terminal and a log line: control characters (ESC, CR, LF, DEL, C1 …)
    /// become `\u{…}` escapes, so text from a server or a file cannot move the cursor, recolour
    /// the terminal or forge a line.
    static func printable(_ text: String) -> String { FlagText.printable(text) }

    /// Now, as an ISO 8601 time (UTC, to the second), for log lines.
    static func timestamp() -> String {
        ISO8601.string(Date())
    }

    /// One JSON line, keys sorted.
    static func json(_ members: [String: FlagValue]) -> String { FlagJSON.string(.object(members), sortedKeys: true) }

    /// Every flag a client can explain: the snapshot's names, sorted.
    static func flagNames(_ client: any FeatureFlagClient) -> [String] { client.snapshot.flags.keys.sorted() }

    /// Every flag of `client` as a table (name, value, source, reason, variant, version, age):
    /// the table a debug screen's ``FlagInspector`` shows.
    static func flagTable(_ names: [String], in client: any FeatureFlagClient) -> [String] {
        let inspector = FlagInspector(client: client)
        return FlagInspector.table(names.map(inspector.row))
    }

    /// The explanation of one flag as JSON.
    static func describe(_ name: String, in client: any FeatureFlagClient) -> [String: FlagValue] {
        let d = client.flagDetails(name)
        var json: [String: FlagValue] = [
            "flag": .string(name), "value": d.value ?? .null, "source": .string(d.source.rawValue), "reason": .string(d.reason.rawValue),
        ]
        json["variant"] = d.variant.map(FlagValue.string)
        json["version"] = d.snapshotVersion.map(FlagValue.string)
        json["age_seconds"] = d.age.map { FlagValue.int($0.roundedClampedToInt) }
        json["error"] = d.errorCode.map { FlagValue.string($0.rawValue) }
        json["service"] = d.service.map(FlagValue.string)
        return json
    }

    /// One line per disagreement among a set's services (``ServiceStrategy/comparison(answering:)``) that `events`
    /// (a client's recent events: the last 32) hold, e.g. `mismatch shared: a=1 b=2`.
    static func disagreements(_ events: [FlagEvent]) -> [String] {
        events.filter { $0.kind == .servicesDisagree }.map { event in
            let values = event.serviceValues ?? [:]
            let pairs = values.keys.sorted().map { "\($0)=\(FlagJSON.string(values[$0]!))" }.joined(separator: " ")
            return printable("mismatch \(event.flag ?? "-"): \(pairs)")
        }
    }

    /// `key=value` pairs into a context; `targetingKey=…` sets the targeting key.
    static func context(_ pairs: [String]) throws(UsageError) -> EvaluationContext {
        var targetingKey: String?
        var attributes: [String: FlagValue] = [:]
        for pair in pairs {
            guard let equals = pair.firstIndex(of: "="), equals != pair.startIndex else {
                throw UsageError(message: "--context takes key=value, got '\(pair)'; e.g. --context venue=venue-42")
            }
            let key = String(pair[..<equals])
            let value = String(pair[pair.index(after: equals)...])
            if key == "targetingKey" { targetingKey = value } else { attributes[key] = .string(value) }
        }
        return EvaluationContext(targetingKey: targetingKey, attributes: attributes)
    }

    /// An absolute http(s) URL.
    static func url(_ text: String, option: String) throws(UsageError) -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            url.host != nil
        else {
            // The URL is not echoed whole: its query may hold a key.
            let got = URL(string: text)?.scheme.map { "a URL with scheme '\($0)'" } ?? "text that is not a URL"
            throw UsageError(message: "--\(option) needs an http(s) URL, got \(got); e.g. --\(option) http://127.0.0.1:8080/flags")
        }
        return url
    }
}
