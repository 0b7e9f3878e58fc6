import FeatureFlags
import Foundation

/// `flagctl demo` for this build: the offline half of the story, on a real fallback file
/// in a temporary directory. The full demo against a loopback flag server replaces it
/// when the online client and provider land.
enum FallbackDemo {
    static let themeColor = FlagKey("plan_themeColor", default: "#000000")
    static let displayName = FlagKey("plan_displayName", default: "Limited mode")
    static let dataLimit = FlagKey("plan_data_limit", default: 0)
    static let features = FlagKey("plan_feature_list", default: [String]())

    static func run() -> Int32 {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("flagctl-demo-\(getpid())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("flags.lkg")
        let user = EvaluationContext(targetingKey: "demo-user", partner: "auralink", planTier: "personal", region: "us")
        let started = Date()

        func show(_ step: String, _ client: FallbackClient) {
            let d = client.details(themeColor)
            let ms = Int(Date().timeIntervalSince(started) * 1000)
            print(
                "[\(pad(ms, 4)) ms] \(step.padding(toLength: 33, withPad: " ", startingAt: 0)) "
                    + "theme=\(d.value) name=\"\(client.value(displayName))\" limit=\(client.value(dataLimit)) "
                    + "features=\(client.value(features).count) source=\(d.source.rawValue) reason=\(d.reason.rawValue)"
                    + (d.errorCode.map { " error=\($0.rawValue)" } ?? "") + " version=\(d.snapshotVersion ?? "-")")
        }

        print("FeatureFlags demo (fallback only) — state in \(directory.path)")
        let first = FallbackClient(fileURL: file, context: user)
        show("1. first launch, nothing stored", first)

        let fetched = FlagSnapshot(
            values: [
                "plan_displayName": "AuraLink Personal", "plan_themeColor": "#3498DB", "plan_data_limit": 150,
                "plan_feature_list": ["usage", "billing", "support_chat", "map", "status"], "kill_switch": false,
            ],
            version: "2025-08-04T10:00:00Z", ttl: 86_400, origin: .network)
        do {
            try first.save(fetched, for: user)
        } catch {
            print("could not write the fallback file: \(error)")
            return 1
        }
        show("2. fetched values saved as LKG", first)

        let relaunched = FallbackClient(fileURL: file, context: user)
        show("3. relaunch offline", relaunched)

        var killed = fetched.flags
        killed["kill_switch"] = FlagEntry(value: true)
        try? relaunched.save(FlagSnapshot(flags: killed, version: "2025-08-04T11:00:00Z", origin: .network), for: user)
        let killedLaunch = FallbackClient(fileURL: file, context: user)
        show("4. kill switch saved, relaunch", killedLaunch)

        try? Data("garbage".utf8).write(to: file)
        let damaged = FallbackClient(fileURL: file, context: user)
        show("5. file damaged, relaunch", damaged)
        if case .rejected(let reason, let keptAt) = damaged.loadOutcome {
            print("         → rejected: \(reason); kept at \(keptAt ?? "-")")
        }
        return 0
    }

    private static func pad(_ n: Int, _ width: Int) -> String {
        let s = String(n)
        return String(repeating: " ", count: max(0, width - s.count)) + s
    }
}
