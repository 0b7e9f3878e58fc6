import Foundation
import Testing
import TestSupport
@testable import FeatureFlags
import FeatureFlagsTesting

@Suite("Reachability")
struct ReachabilityTests {
    static let ipv4WithDefault = """
        Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
        eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0
        eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
        """
    static let ipv4LocalOnly = """
        Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
        eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
        """
    /// No network: an interface with nothing but a link-local route, and loopback.
    static let ipv4Unconnected = """
        Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
        eth0\t0000FEA9\t00000000\t0001\t0\t0\t1000\t0000FFFF\t0\t0\t0
        lo\t0000007F\t00000000\t0001\t0\t0\t0\t000000FF\t0\t0\t0
        """
    static let ipv6WithDefault = """
        fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000002 00000000 00000001     eth0
        00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000002 00000000 00000003     wlan0
        00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo
        """
    static let ipv6RejectOnly = """
        00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200       lo
        00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200201     eth0
        """

    /// Apple's path monitor says `.requiresConnection` behind an on-demand VPN or a sleeping
    /// cellular link until a connection brings the path up: taken for "no network", nothing
    /// would ever fetch.
    @Test func aPathThatRequiresAConnectionIsWorthAFetch() {
        #expect(PathStatus.satisfied.allowsFetching)
        #expect(PathStatus.requiresConnection.allowsFetching)
        #expect(!PathStatus.unsatisfied.allowsFetching)
    }

    #if os(Linux)
    @Test func routesToANetworkAreFoundInTheRouteTables() {
        #expect(LinuxReachability.routeInterfaces(ipv4: Self.ipv4WithDefault, ipv6: "") == ["eth0"])
        #expect(LinuxReachability.routeInterfaces(ipv4: "", ipv6: Self.ipv6WithDefault) == ["wlan0"], "not eth0's link-local route")
        #expect(LinuxReachability.routeInterfaces(ipv4: "", ipv6: Self.ipv6RejectOnly).isEmpty)
        #expect(LinuxReachability.routeInterfaces(ipv4: "", ipv6: "").isEmpty)
        #expect(LinuxReachability.routeInterfaces(ipv4: "garbage\nmore garbage", ipv6: "x y z").isEmpty)
    }

    /// A LAN without a gateway (a venue's own network, its flag service on it): Apple's path
    /// monitor calls that a path, and so does Linux's. Before, only a default route counted
    /// and a provider on such a LAN never fetched.
    @Test func aLANWithoutADefaultRouteIsAPath() {
        #expect(LinuxReachability.routeInterfaces(ipv4: Self.ipv4LocalOnly, ipv6: "") == ["eth0"])
        let ipv6LAN = """
            fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth1
            20010db8000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth2
            """
        #expect(LinuxReachability.routeInterfaces(ipv4: "", ipv6: ipv6LAN) == ["eth1", "eth2"])
        // What every interface gets without a network: link-local (169.254/16, fe80::/64) and
        // multicast routes; loopback's own routes.
        let ipv4Unconnected = Self.ipv4Unconnected + "\neth0\t000000E0\t00000000\t0001\t0\t0\t0\t000000F0\t0\t0\t0"
        let ipv6Unconnected = """
            fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0
            ff000000000000000000000000000000 08 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0
            00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000001 00000000 80200001       lo
            """
        #expect(LinuxReachability.routeInterfaces(ipv4: ipv4Unconnected, ipv6: ipv6Unconnected).isEmpty)
    }

    @Test func anInterfaceThatIsDownDoesNotCount() throws {
        let dir = TempDir()
        try Self.ipv4WithDefault.write(toFile: dir.url("route").path, atomically: true, encoding: .utf8)
        var files = LinuxReachability.RouteFiles(ipv4: dir.url("route").path, ipv6: dir.url("none").path)
        files.operstate = { _ in "down" }
        #expect(!LinuxReachability.evaluate(files))
        files.operstate = { _ in "up" }
        #expect(LinuxReachability.evaluate(files))
        files.operstate = { _ in nil }
        #expect(LinuxReachability.evaluate(files))
    }

    @Test(.hangLimit()) func recheckReportsChanges() async throws {
        let dir = TempDir()
        let route = dir.url("route").path
        try Self.ipv4Unconnected.write(toFile: route, atomically: true, encoding: .utf8)
        var files = LinuxReachability.RouteFiles(ipv4: route, ipv6: dir.url("none").path)
        files.operstate = { _ in "up" }
        let monitor = LinuxReachability(files: files, fallbackInterval: .seconds(60))
        #expect(!monitor.isReachable)
        var updates = monitor.updates().makeAsyncIterator()
        #expect(await updates.next() == false)
        try Self.ipv4WithDefault.write(toFile: route, atomically: true, encoding: .utf8)
        monitor.recheck()
        #expect(await updates.next() == true)
        #expect(monitor.isReachable)
        monitor.stop()
        monitor.stop()
        #expect(await updates.next() == nil)
        #expect(!monitor.isWatching)
    }

    @Test(.hangLimit()) func aMonitorStartsAtTheFirstQuestionAndNotAfterStop() async throws {
        let dir = TempDir()
        let route = dir.url("route").path
        try Self.ipv4WithDefault.write(toFile: route, atomically: true, encoding: .utf8)
        let files = LinuxReachability.RouteFiles(ipv4: route, ipv6: dir.url("none").path, operstate: { _ in "up" })
        let idle = LinuxReachability(files: files, fallbackInterval: .seconds(60))
        #expect(!idle.usesNetlink, "nothing started before the first question")
        #expect(idle.isReachable, "the first question reads the tables")
        idle.stop()
        // Stopped before anyone asked: it never starts, says "no path" and its streams end at once.
        let stopped = LinuxReachability(files: files, fallbackInterval: .seconds(60))
        stopped.stop()
        #expect(!stopped.isReachable)
        var updates = stopped.updates().makeAsyncIterator()
        #expect(await updates.next() == nil)
    }

    @Test(.hangLimit()) func withoutAStopPipeTheMonitorStillFollowsAndStopsAtOnce() async throws {
        // A process out of file descriptors gets no pipe to stop the thread with: the monitor
        // re-checks at the fallback interval, and a stop returns at once (it used to wait for a
        // thread that nothing could wake).
        let dir = TempDir()
        let route = dir.url("route").path
        try Self.ipv4Unconnected.write(toFile: route, atomically: true, encoding: .utf8)
        let files = LinuxReachability.RouteFiles(ipv4: route, ipv6: dir.url("none").path, operstate: { _ in "up" })
        let monitor = LinuxReachability(files: files, fallbackInterval: .milliseconds(20), makePipe: { nil })
        var updates = monitor.updates().makeAsyncIterator()
        #expect(await updates.next() == false)
        try Self.ipv4WithDefault.write(toFile: route, atomically: true, encoding: .utf8)
        #expect(await eventually { monitor.isReachable }, "found by the periodic re-check")
        let clock = ContinuousClock()
        let stopped = clock.measure { monitor.stop() }
        #expect(stopped < TestTiming.scaled(.seconds(1)), "\(stopped)")
        var ended = false
        while !ended { ended = await updates.next() == nil }
        #expect(await eventually { !monitor.isWatching }, "the thread ends at its next wake-up")
    }

    @Test(.hangLimit()) func aFailingPollDoesNotEndTheMonitor() async throws {
        // poll(2) failing (out of memory, say) used to end the monitor's thread: the last
        // answer stayed for the rest of the process. It keeps re-checking, and stops on demand.
        let dir = TempDir()
        let route = dir.url("route").path
        try Self.ipv4Unconnected.write(toFile: route, atomically: true, encoding: .utf8)
        let files = LinuxReachability.RouteFiles(ipv4: route, ipv6: dir.url("none").path, operstate: { _ in "up" })
        let calls = Locked(0)
        let failingPoll: @Sendable (UnsafeMutablePointer<pollfd>, nfds_t, Int32) -> Int32 = { _, _, _ in
            calls.withLock { $0 += 1 }
            errno = ENOMEM
            return -1
        }
        let monitor = LinuxReachability(files: files, fallbackInterval: .milliseconds(20), poll: failingPoll)
        #expect(!monitor.isReachable)
        try Self.ipv4WithDefault.write(toFile: route, atomically: true, encoding: .utf8)
        #expect(await eventually { monitor.isReachable }, "re-checked although every poll failed")
        #expect(calls.withLock { $0 } >= 1)
        let clock = ContinuousClock()
        let stopped = clock.measure { monitor.stop() }
        #expect(stopped < TestTiming.scaled(.seconds(2)), "\(stopped)")
        #expect(!monitor.isWatching)
    }

    @Test(.hangLimit()) func liveMonitorAgreesWithTheRouteTables() async throws {
        let monitor = LinuxReachability()
        defer { monitor.stop() }
        #expect(monitor.isReachable == LinuxReachability.evaluate(.init()))
        var updates = monitor.updates().makeAsyncIterator()
        #expect(await updates.next() == monitor.isReachable)
        print("LinuxReachability: reachable \(monitor.isReachable), netlink \(monitor.usesNetlink)")
    }
    #endif

    @Test func manualReachabilityAnnouncesOnlyChanges() async {
        let manual = ManualReachability(true)
        var updates = manual.updates().makeAsyncIterator()
        #expect(await updates.next() == true)
        manual.set(true)
        manual.set(false)
        #expect(await updates.next() == false)
        #expect(!manual.isReachable)
        manual.stop()
        #expect(await updates.next() == nil)
    }

    @Test func alwaysReachable() async {
        let always = AlwaysReachable()
        #expect(always.isReachable)
        var updates = always.updates().makeAsyncIterator()
        #expect(await updates.next() == true)
        always.stop()
        #expect(await updates.next() == nil)
        let system = SystemReachability.make()
        var first = system.updates().makeAsyncIterator()
        #expect(await first.next() == system.isReachable)
        system.stop()
    }
}
