import FoundationNetworking
import Foundation
import Testing
import TestSupport
import FeatureFlags
import FeatureFlagsTesting
import FlagServer
import POSExample

/// Each module of the example app with an in-memory client (three lines each), then the
/// whole app on a real provider and a loopback server.
@Suite("Dependency injection: the POS example")
struct POSExampleTests {
    let api = URL(string: "https://api.example.com")!

    @Test func networkingReadsItsFlags() {
        let flags = InMemoryFlagClient(["pos_orders_api_version": 2, "pos_request_timeout_seconds": 3.5])
        let request = OrderRequestBuilder(baseURL: api, flags: flags).submitOrder(id: "o-1")
        #expect(request.url?.path == "/v2/orders/o-1")
        #expect(request.timeoutInterval == 3.5)
        #expect(request.httpMethod == "POST")
    }

    @Test func networkingFallsBackToSafeDefaults() {
        let flags = InMemoryFlagClient(["pos_orders_api_version": "two", "pos_request_timeout_seconds": 999])
        let request = OrderRequestBuilder(baseURL: api, flags: flags).submitOrder(id: "o-1")
        #expect(request.url?.path == "/v1/orders/o-1")  // mistyped → default
        #expect(request.timeoutInterval == 60)  // clamped
    }

    @Test func storageReadsItsFlags() {
        let flags = InMemoryFlagClient(["pos_receipt_retention_days": 7])
        let store = ReceiptStore(flags: flags)
        let now = Date(timeIntervalSince1970: 1_750_000_000)
        store.add(.init(orderID: "old", date: now.addingTimeInterval(-8 * 86_400)))
        store.add(.init(orderID: "new", date: now.addingTimeInterval(-6 * 86_400)))
        #expect(store.purge(now: now) == 1)
        #expect(store.all.map(\.orderID) == ["new"])
        flags.set(POSFlags.receiptRetentionDays, 1)
        #expect(store.purge(now: now) == 1)
    }

    @Test func viewModelReadsItsFlags() {
        let flags = InMemoryFlagClient(["new_checkout": true, "plan_themeColor": "#2C3E50"])
        let checkout = CheckoutViewModel(flags: flags)
        #expect(checkout.flow == .express)
        #expect(checkout.accentColor == "#2C3E50")
        flags.setKillSwitch(true)
        #expect(checkout.flow == .classic)
        #expect(checkout.isLimitedMode)
        #expect(checkout.explanation == "new_checkout=false source=kill_switch reason=DISABLED")
    }

    @Test func theWholeAppOnAProviderAndALoopbackServer() async throws {
        var document = ServerDocument.seedExample
        document.base.flags["pos_orders_api_version"] = FlagEntry(value: 3)
        let server = try FlagServer(document: document)
        defer { server.stop() }
        let state = TempDir()
        let (app, provider) = POSApp.live(
            venue: "venue-42", user: "cashier-7", flagsURL: server.flagsURL, apiBaseURL: api,
            stateDirectory: URL(fileURLWithPath: state.path), reachability: ManualReachability(true),
            fetchBudget: TestTiming.loopbackBudget)
        defer { provider.shutdown() }
        // Before the network: code defaults.
        #expect(app.checkout.flow == .classic)
        let run = Task { await provider.run() }
        #expect(await provider.waitUntilReady(timeout: TestTiming.eventualityBound) == .ready)
        #expect(app.checkout.flow == .express)  // the venue-42 pilot
        #expect(app.orders.submitOrder(id: "x").url?.path == "/v3/orders/x")
        #expect(app.checkout.explanation.contains("source=network"))
        provider.shutdown()
        await run.value
        // A relaunch offline serves the same decisions from the fallback file.
        let (offlineApp, offlineProvider) = POSApp.live(
            venue: "venue-42", user: "cashier-7", flagsURL: server.flagsURL, apiBaseURL: api,
            stateDirectory: URL(fileURLWithPath: state.path), reachability: ManualReachability(false))
        defer { offlineProvider.shutdown() }
        #expect(offlineApp.checkout.flow == .express)
        #expect(offlineApp.checkout.explanation.contains("source=fallback"))
    }
}
