import Foundation
@testable import FeatureFlags

/// A fresh directory under the system temp dir, removed when released.
final class TempDir: Sendable {
    let path: String

    init() {
        var template = Array((NSTemporaryDirectory() + "/ff-test-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        path = made.map { String(cString: $0) } ?? NSTemporaryDirectory() + "/ff-test-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func url(_ name: String) -> URL { URL(fileURLWithPath: path).appendingPathComponent(name) }

    func files() -> [String] { (try? FileManager.default.contentsOfDirectory(atPath: path))?.sorted() ?? [] }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// A wall-clock date tests move by hand.
final class ManualDate: Sendable {
    private let current: Locked<Date>
    init(_ start: Date = Date(timeIntervalSince1970: 1_750_000_000)) { current = Locked(start) }
    var now: Date { current.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
    var function: @Sendable () -> Date { { self.now } }
}

/// The first `count` elements of `stream`.
func first<S: AsyncSequence & Sendable>(_ count: Int, of stream: S) async -> [S.Element] where S.Element: Sendable {
    var out: [S.Element] = []
    var iterator = stream.makeAsyncIterator()
    while out.count < count, let next = try? await iterator.next() { out.append(next) }
    return out
}

/// The demo's AuraLink Personal values.
let auraLinkPersonal: [String: FlagValue] = [
    "plan_displayName": "AuraLink Personal",
    "plan_themeColor": "#3498DB",
    "plan_data_limit": 150,
    "plan_priority_support": false,
    "plan_feature_list": ["usage", "billing", "support_chat", "map", "status"],
    "kill_switch": false,
]

/// The demo's AuraLink Business values.
let auraLinkBusiness: [String: FlagValue] = [
    "plan_displayName": "AuraLink Business",
    "plan_themeColor": "#2C3E50",
    "plan_data_limit": 750,
    "plan_priority_support": true,
    "plan_feature_list": ["usage", "billing", "support_chat", "map", "status", "team"],
    "kill_switch": false,
]

func snapshot(_ values: [String: FlagValue], version: String = "v1", at date: Date = Date(timeIntervalSince1970: 1_750_000_000)) -> FlagSnapshot {
    FlagSnapshot(values: values, version: version, fetchedAt: date, ttl: 86_400)
}

/// Runs CPU- or disk-heavy test work on a thread of its own, so it does not occupy one of
/// the few threads of Swift's global executor that the timing-sensitive loopback tests need
/// (one per core: two here). Not `DispatchQueue.global()`: on Linux its worker threads are
/// the very pool the global executor runs on.
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// Wall-clock allowances for the few tests that measure real time (deadlines over loopback).
/// Under ThreadSanitizer everything runs several times slower, so the allowances grow —
/// detected from the sanitizer's runtime being linked in, so that a plain
/// `swift test --sanitize=thread` passes without extra settings.
enum TestTiming {
    static let scale: Int64 = {
        if let value = ProcessInfo.processInfo.environment["FEATUREFLAGS_TEST_TIME_SCALE"], let scale = Int64(value), scale > 0 {
            return scale
        }
        return underThreadSanitizer ? 10 : 1
    }()

    /// Whether ThreadSanitizer's runtime is linked in (its shadow memory also makes resident
    /// memory figures meaningless).
    static let underThreadSanitizer = dlsym(dlopen(nil, RTLD_NOW), "__tsan_init") != nil

    /// `duration` stretched for the current build.
    static func scaled(_ duration: Duration) -> Duration { duration * Int(scale) }
}
