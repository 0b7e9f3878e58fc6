import Foundation
import Testing
@testable import FeatureFlags

@Suite("FallbackClient")
struct FallbackClientTests {
    let personal = EvaluationContext(targetingKey: "user-1", partner: "auralink", planTier: "personal")
    let business = EvaluationContext(targetingKey: "user-1", partner: "auralink", planTier: "business")

    @Test func firstLaunchServesBundledThenCodeDefaults() async throws {
        try await blocking {
            let dir = TempDir()
            let client = FallbackClient(fileURL: dir.url("flags.lkg"), bundledDefaults: .values(["plan_themeColor": "#111111"]))
            #expect(client.loadOutcome == .noFile)
            #expect(client.status == .ready)
            let theme = client.details(.themeColor)
            #expect(theme.value == "#111111")
            #expect(theme.source == .bundledDefaults)
            #expect(theme.reason == .static)
            #expect(client.details(.newCheckout).source == .codeDefault)
            #expect(dir.files().isEmpty)
        }
    }

    @Test func roundTripAcrossRelaunch() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("flags.lkg")
            let fetched = FlagSnapshot(
                flags: [
                    "plan_themeColor": FlagEntry(value: "#3498DB", variant: "blue", reason: .targetingMatch, metadata: ["m": [1, 2.0]]),
                    "odd": FlagEntry(value: nil, reason: .error, errorCode: .parseError),
                    "nested": FlagEntry(value: ["a": ["b": [.null, true, -3, 0.25, "é"]]]),
                ],
                version: "2025-08-04T10:00:00Z", fetchedAt: Date(timeIntervalSince1970: 1_750_000_000.5), ttl: 86_400,
                etag: "\"abc\"", origin: .network)
            do {
                let client = FallbackClient(fileURL: url, context: personal)
                try client.save(fetched, for: personal)
                #expect(client.value(.themeColor) == "#3498DB")
            }
            let clock = ManualDate(Date(timeIntervalSince1970: 1_750_000_100.5))
            let relaunched = FallbackClient(fileURL: url, now: clock.function)
            #expect(relaunched.loadOutcome == .loaded(contexts: 1, bytes: try Data(contentsOf: url).count))
            #expect(relaunched.currentContextFingerprint == personal.fingerprint)
            let restored = relaunched.snapshot
            #expect(restored.flags == fetched.flags)
            #expect(restored.version == fetched.version)
            #expect(restored.fetchedAt == fetched.fetchedAt)
            #expect(restored.ttl == 86_400)
            #expect(restored.etag == "\"abc\"")
            #expect(restored.origin == .fallback)
            #expect(restored.contextFingerprint == personal.fingerprint)
            let details = relaunched.details(.themeColor)
            #expect(details.source == .fallback)
            #expect(details.reason == .cached)
            #expect(details.variant == "blue")
            #expect(details.age == 100)
            #expect(details.snapshotVersion == "2025-08-04T10:00:00Z")
            #expect(relaunched.recentEvents.first == .fallbackLoaded(contexts: 1, bytes: try Data(contentsOf: url).count))
        }
    }

    @Test func contextsAreIsolated() async throws {
        try await blocking {
            let dir = TempDir()
            let client = FallbackClient(fileURL: dir.url("f"), context: personal)
            try client.save(snapshot(auraLinkPersonal), for: personal)
            try client.save(snapshot(auraLinkBusiness), for: business)
            // Saving another context does not change what is served.
            #expect(client.value(.themeColor) == "#3498DB")
            client.select(business)
            #expect(client.value(.themeColor) == "#2C3E50")
            // A context with no Last-Known-Good never sees another context's values.
            let stranger = EvaluationContext(targetingKey: "user-2")
            #expect(client.select(stranger) == nil)
            #expect(client.value(.themeColor) == "#000000")
            #expect(client.details(.themeColor).source == .codeDefault)
            client.select(personal)
            #expect(client.value(.themeColor) == "#3498DB")
            // Relaunch for a specific context.
            let relaunched = FallbackClient(fileURL: dir.url("f"), context: business)
            #expect(relaunched.value(.themeColor) == "#2C3E50")
            let unknown = FallbackClient(fileURL: dir.url("f"), context: stranger)
            #expect(unknown.snapshot == .empty)
        }
    }

    @Test func leastRecentlyUsedContextsAreEvicted() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("f")
            let client = FallbackClient(fileURL: url, capacity: 3)
            let contexts = (0..<5).map { EvaluationContext(targetingKey: "user-\($0)") }
            for (n, context) in contexts.prefix(3).enumerated() {
                try client.save(snapshot(["n": .int(n)]), for: context)
            }
            // Using context 0 makes it most recent, so context 1 is evicted next.
            client.select(contexts[0])
            try client.save(snapshot(["n": 3]), for: contexts[3])
            #expect(client.storedContextFingerprints == [contexts[3], contexts[0], contexts[2]].map(\.fingerprint))
            try client.save(snapshot(["n": 4]), for: contexts[4])
            #expect(client.storedContextFingerprints == [contexts[4], contexts[3], contexts[0]].map(\.fingerprint))
            let relaunched = FallbackClient(fileURL: url, capacity: 3)
            #expect(relaunched.storedContextFingerprints == [contexts[4], contexts[3], contexts[0]].map(\.fingerprint))
            #expect(relaunched.storedSnapshot(for: contexts[0])?.flags["n"]?.value == 0)
            #expect(relaunched.storedSnapshot(for: contexts[1]) == nil)
        }
    }

    @Test func defaultCapacityIsFive() async throws {
        try await blocking {
            let dir = TempDir()
            let client = FallbackClient(fileURL: dir.url("f"))
            for n in 0..<7 { try client.save(snapshot(["n": .int(n)]), for: EvaluationContext(targetingKey: "u\(n)")) }
            #expect(client.capacity == 5)
            #expect(client.storedContextFingerprints.count == 5)
        }
    }

    @Test func savingTheCurrentContextServesAndAnnouncesIt() async throws {
        let dir = TempDir()
        let client = FallbackClient(fileURL: dir.url("f"), context: personal)
        let changes = client.changes()
        try client.save(snapshot(auraLinkPersonal), for: personal)
        let change = await first(1, of: changes)
        #expect(change.first?.keys.contains("plan_themeColor") == true)
        #expect(client.value(.themeColor) == "#3498DB")
    }

    @Test func fileIsPrivate() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("nested/dir/flags.lkg")
            let client = FallbackClient(fileURL: url)
            try client.save(snapshot(auraLinkPersonal), for: personal)
            #expect(FileIO.permissions(url.path) == 0o600)
            #expect(FileIO.permissions(dir.url("nested/dir").path) == 0o700)
            // A replaced file stays private even if someone loosened the old one.
            chmod(url.path, 0o644)
            try client.save(snapshot(auraLinkBusiness), for: business)
            #expect(FileIO.permissions(url.path) == 0o600)
            // No temp file is left behind.
            #expect(dir.files() == ["nested"])
            #expect((try? FileManager.default.contentsOfDirectory(atPath: dir.url("nested/dir").path))?.sorted() == ["flags.lkg", "flags.lkg.lock"])
            #expect(FileIO.permissions(dir.url("nested/dir/flags.lkg.lock").path) == 0o600)
        }
    }

    @Test func killSwitchSurvivesARelaunch() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("f")
            var killed = auraLinkPersonal
            killed["kill_switch"] = true
            killed["new_checkout"] = true
            try FallbackClient(fileURL: url, context: personal).save(snapshot(killed), for: personal)
            let relaunched = FallbackClient(fileURL: url, context: personal)
            #expect(relaunched.isKillSwitchActive)
            #expect(relaunched.value(.newCheckout) == false)
            #expect(relaunched.details(.newCheckout).source == .killSwitch)
            #expect(relaunched.recentEvents.contains(.killSwitch(active: true)))
        }
    }

    @Test func bundledDefaultsFromAJSONFile() async throws {
        try await blocking {
            let dir = TempDir()
            let defaults = dir.url("defaults.json")
            try Data(##"{"plan_themeColor":"#222222","plan_data_limit":100}"##.utf8).write(to: defaults)
            let client = FallbackClient(fileURL: dir.url("f"), context: personal, bundledDefaults: .jsonFile(defaults))
            #expect(client.value(.themeColor) == "#222222")
            try client.save(snapshot(["plan_themeColor": "#3498DB"]), for: personal)
            // The snapshot wins; the defaults fill what it lacks.
            #expect(client.value(.themeColor) == "#3498DB")
            #expect(client.int("plan_data_limit", default: 0) == 100)
        }
    }

    @Test func unusableBundledDefaultsAreAnErrorEvent() async throws {
        try await blocking {
            let dir = TempDir()
            let bad = dir.url("defaults.json")
            try Data("[1,2".utf8).write(to: bad)
            let client = FallbackClient(fileURL: dir.url("f"), bundledDefaults: .jsonFile(bad))
            #expect(client.value(.themeColor) == "#000000")
            #expect(client.recentEvents.contains { if case .error(.parseError, _) = $0 { return true } else { return false } })
            let missing = FallbackClient(fileURL: dir.url("f"), bundledDefaults: .jsonFile(dir.url("absent.json")))
            #expect(missing.recentEvents.contains { if case .error = $0 { return true } else { return false } })
            try Data("[1,2]".utf8).write(to: bad)
            let notObject = FallbackClient(fileURL: dir.url("f"), bundledDefaults: .jsonFile(bad))
            #expect(notObject.recentEvents.contains(.error(.parseError, message: "bundled defaults file is not a JSON object")))
        }
    }

    @Test func removeAndRemoveAll() async throws {
        try await blocking {
            let dir = TempDir()
            let client = FallbackClient(fileURL: dir.url("f"), context: personal)
            try client.save(snapshot(auraLinkPersonal), for: personal)
            try client.save(snapshot(auraLinkBusiness), for: business)
            try client.remove(personal)
            #expect(client.snapshot == .empty)
            #expect(client.storedContextFingerprints == [business.fingerprint])
            try client.removeAll()
            #expect(FallbackClient(fileURL: dir.url("f")).storedContextFingerprints.isEmpty)
        }
    }

    @Test func leftoverTempFilesAreIgnored() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("flags.lkg")
            try FallbackClient(fileURL: url).save(snapshot(auraLinkPersonal), for: personal)
            // A crash mid-write leaves a temp file beside the real one.
            try Data("half-written garbage".utf8).write(to: dir.url(".flags.lkg.tmp-123-456"))
            let relaunched = FallbackClient(fileURL: url)
            #expect(relaunched.value(.themeColor) == "#3498DB")
            try relaunched.save(snapshot(auraLinkBusiness), for: business)
            #expect(FallbackClient(fileURL: url, context: business).value(.themeColor) == "#2C3E50")
        }
    }

    @Test func defaultLocationFollowsXDGStateHome() async throws {
        try await blocking {
            let url = FallbackClient.defaultFileURL(appName: "MyApp")
            #expect(url.lastPathComponent == "flags.lkg")
            #expect(url.deletingLastPathComponent().lastPathComponent == "MyApp")
            #if os(Linux)
            let env = ProcessInfo.processInfo.environment
            if let state = env["XDG_STATE_HOME"], state.hasPrefix("/") {
                #expect(url.path.hasPrefix(state))
            } else {
                #expect(url.path.contains("/.local/state/MyApp"))
            }
            #endif
        }
    }

    @Test func coldStartDecodesOnlyTheCurrentContext() async throws {
        try await blocking {
            let dir = TempDir()
            let url = dir.url("f")
            let client = FallbackClient(fileURL: url)
            var big: [String: FlagValue] = [:]
            for i in 0..<1_000 { big["flag_\(i)"] = i % 2 == 0 ? .bool(true) : .string("value-\(i)") }
            for n in 0..<5 { try client.save(snapshot(big), for: EvaluationContext(targetingKey: "u\(n)")) }
            let relaunched = FallbackClient(fileURL: url)
            #expect(relaunched.snapshot.flags.count == 1_000)
            #expect(relaunched.bool("flag_0", default: false))
            #expect(relaunched.string("flag_1", default: "") == "value-1")
        }
    }
}
