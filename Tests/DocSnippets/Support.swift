import FeatureFlags
import Foundation

// What the snippets take for granted: an app's own pieces, stubbed so that the snippets
// compile as written. Nothing here is shown in the documentation.

/// The app's signed-in user.
let user = EvaluationContext(targetingKey: "user-1", attributes: ["venue": "venue-42", "plan": "business"])
/// A temporary directory for snippets that are run.
let temporaryDirectory = FileManager.default.temporaryDirectory

/// A fetcher and a store, as the quick start builds them.
func exampleFetcher() -> FlagFetcher { FlagFetcher(endpoint: .json(post: URL(string: "https://flags.example.com/flags")!)) }
func exampleStore() -> LastKnownGoodStore { LastKnownGoodStore(fileURL: temporaryDirectory.appendingPathComponent("snippets-\(UUID()).lkg")) }

/// The app's logger, tracer and analytics, as the examples use them.
struct AppLogger: Sendable {
    func debug(_ message: String) { _ = message }
    func info(_ message: String) { _ = message }
    func warning(_ message: String) { _ = message }
    func error(_ message: String) { _ = message }
}
let logger = AppLogger()
struct TraceSpan: Sendable { func end() {} }
struct AppTracer: Sendable { func start(_ name: String) -> TraceSpan { _ = name; return TraceSpan() } }
let tracer = AppTracer()
struct AppAnalytics: Sendable { func exposure(_ flag: String, _ variant: String?, _ context: String) { _ = (flag, variant, context) } }
let analytics = AppAnalytics()
/// A hook of the app's.
struct AuditHook: FlagHook {}
/// The base URL of the app's own flag service, in the conformance example.
let url = URL(string: "https://acme.example.com/flags")!
/// The app's metrics backend, in the observability example.
struct AppMetrics: Sendable {
    func count(_ name: String, by amount: Int, dimensions: [(String, String)]) { _ = (name, amount, dimensions) }
    func gauge(_ name: String, _ value: Double, dimensions: [(String, String)]) { _ = (name, value, dimensions) }
    func time(_ name: String, milliseconds: Double, dimensions: [(String, String)]) { _ = (name, milliseconds, dimensions) }
}
