#if os(Linux)
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// ``Reachability`` on Linux: a route through an up interface, watched by netlink and periodic re-checks from the first question.
final class LinuxReachability: Reachability {
    /// The monitor's life.
    private enum Phase {
        case idle
        /// Started: the pipe that stops the thread, and whether netlink events arrive.
        case running(stopPipe: (read: Int32, write: Int32), usesNetlink: Bool)
        case stopped
    }

    /// Whether the thread runs, and whether ``stop()`` was called (checked at each wake-up, for when there is no stop pipe).
    private let thread = Locked((running: false, stopping: false))
    private let stream = LatestValueStream<Bool>()
    /// Held while starting and stopping, so that the first question waits for the first answer.
    private let phase = Locked(Phase.idle)
    private let done = DispatchSemaphore(value: 0)
    private let files: RouteFiles
    private let fallbackInterval: Duration
    /// Makes the pipe that stops the thread; nil when none can be made.
    private let makePipe: @Sendable () -> (read: Int32, write: Int32)?
    /// Waits for the pipe or netlink (`poll(2)`; replaceable for tests).
    private let waitForEvents: @Sendable (UnsafeMutablePointer<pollfd>, nfds_t, Int32) -> Int32

    /// Where the route tables and link states are read.
    struct RouteFiles: Sendable {
        var ipv4 = "/proc/net/route"
        var ipv6 = "/proc/net/ipv6_route"
        var operstate: @Sendable (String) -> String? = { name in
            (try? String(contentsOfFile: "/sys/class/net/\(name)/operstate", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    /// A monitor reading `files`, with replaceable `makePipe` and `poll`; re-checks every `fallbackInterval`
    /// without netlink, ten times slower beside it.
    init(
        files: RouteFiles = RouteFiles(), fallbackInterval: Duration = .seconds(5),
        makePipe: @escaping @Sendable () -> (read: Int32, write: Int32)? = LinuxReachability.systemPipe,
        poll: @escaping @Sendable (UnsafeMutablePointer<pollfd>, nfds_t, Int32) -> Int32 = LinuxReachability.systemPoll
    ) {
        self.files = files
        self.fallbackInterval = fallbackInterval
        self.makePipe = makePipe
        self.waitForEvents = poll
    }

    /// `poll(2)`.
    static let systemPoll: @Sendable (UnsafeMutablePointer<pollfd>, nfds_t, Int32) -> Int32 = { poll($0, $1, $2) }

    /// A new pipe, or nil.
    static let systemPipe: @Sendable () -> (read: Int32, write: Int32)? = {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return nil }
        return (fds[0], fds[1])
    }

    deinit { stop() }

    /// Whether a route to a network through an up interface exists now.
    var isReachable: Bool {
        startIfIdle()
        return stream.latest ?? false
    }

    /// The current answer, then changes.
    func updates() -> AsyncStream<Bool> {
        startIfIdle()
        return stream.subscribe()
    }

    /// Whether the monitor's thread is running now.
    var isWatching: Bool { thread.withLock { $0.running } }

    /// Whether route changes arrive as netlink events (false: periodic checks only, or not started).
    var usesNetlink: Bool {
        if case .running(_, let netlink) = phase.withLock({ $0 }) { return netlink }
        return false
    }

    /// Reads the tables and starts the thread, the first time; after ``stop()``, nothing.
    private func startIfIdle() {
        phase.withLock { phase in
            guard case .idle = phase else { return }
            let initial = Self.evaluate(files)
            stream.send(initial)
            let stopPipe = makePipe() ?? (-1, -1)
            let netlink = Self.openNetlink()
            let interval = fallbackInterval.pollMilliseconds
            // Without a stop pipe, wake at the fallback interval to notice a stop.
            let period = netlink >= 0 && stopPipe.read >= 0 ? interval * 10 : interval
            thread.withLock { $0.running = true }
            let watcher = Thread { [self] in
                watch(stopRead: stopPipe.read, netlink: netlink, periodMilliseconds: period)
                if netlink >= 0 { close(netlink) }
                thread.withLock { $0.running = false }
                done.signal()
            }
            watcher.name = "FeatureFlags.LinuxReachability"
            watcher.start()
            phase = .running(stopPipe: stopPipe, usesNetlink: netlink >= 0)
        }
    }

    /// Ends the monitor thread and the streams. Idempotent.
    func stop() {
        let previous = phase.withLock { phase -> Phase in
            defer { phase = .stopped }
            return phase
        }
        switch previous {
        case .stopped:
            return
        case .idle:
            break
        case .running(let stopPipe, _):
            thread.withLock { $0.stopping = true }
            // Without a pipe the thread ends at its next wake-up; don't wait for it.
            guard stopPipe.write >= 0 else { break }
            var byte: UInt8 = 1
            _ = write(stopPipe.write, &byte, 1)
            done.wait()
            close(stopPipe.read)
            close(stopPipe.write)
        }
        stream.finish()
    }

    /// Re-reads the route tables now and reports a change.
    func recheck() {
        stream.send(Self.evaluate(files))
    }

    private func watch(stopRead: Int32, netlink: Int32, periodMilliseconds: Int32) {
        var fds = [pollfd(fd: stopRead, events: Int16(POLLIN), revents: 0)]
        if netlink >= 0 { fds.append(pollfd(fd: netlink, events: Int16(POLLIN), revents: 0)) }
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            for i in fds.indices { fds[i].revents = 0 }
            let n = fds.withUnsafeMutableBufferPointer { waitForEvents($0.baseAddress!, nfds_t($0.count), periodMilliseconds) }
            if n < 0, errno != EINTR {
                // A failed poll: wait at most a second and re-check.
                usleep(UInt32(min(periodMilliseconds, 1_000)) * 1_000)
            }
            if fds[0].revents != 0 || thread.withLock({ $0.stopping }) { return }
            if fds.count > 1, fds[1].revents != 0 {
                while recv(netlink, &buffer, buffer.count, Int32(MSG_DONTWAIT)) > 0 {}
            }
            recheck()
        }
    }

    /// A netlink socket subscribed to link, address and route changes; -1 if unavailable.
    private static func openNetlink() -> Int32 {
        #if canImport(Musl)
        let fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0 /* NETLINK_ROUTE */)
        #else
        let fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0 /* NETLINK_ROUTE */)
        #endif
        guard fd >= 0 else { return -1 }
        // struct sockaddr_nl { sa_family_t nl_family; unsigned short nl_pad; u32 nl_pid; u32 nl_groups; }
        let groups: UInt32 = 0x1 | 0x10 | 0x40 | 0x100 | 0x400  // LINK, IPV4_IFADDR, IPV4_ROUTE, IPV6_IFADDR, IPV6_ROUTE
        var address = [UInt8](repeating: 0, count: 12)
        address[0] = UInt8(AF_NETLINK & 0xFF)
        address[1] = UInt8((AF_NETLINK >> 8) & 0xFF)
        for i in 0..<4 { address[8 + i] = UInt8((groups >> UInt32(8 * i)) & 0xFF) }
        let bound = address.withUnsafeBytes { raw -> Int32 in
            guard let base = raw.baseAddress else { return -1 }
            return bind(fd, base.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
        guard bound == 0 else {
            close(fd)
            return -1
        }
        return fd
    }

    /// Whether the tables in `files` hold a route to a network through an interface that is up.
    static func evaluate(_ files: RouteFiles) -> Bool {
        let v4 = (try? String(contentsOfFile: files.ipv4, encoding: .utf8)) ?? ""
        let v6 = (try? String(contentsOfFile: files.ipv6, encoding: .utf8)) ?? ""
        let interfaces = routeInterfaces(ipv4: v4, ipv6: v6)
        return interfaces.contains { name in
            let state = files.operstate(name)
            return state == nil || state == "up" || state == "unknown"
        }
    }

    /// Interfaces with a default or network route (a LAN counts, as on Apple); not loopback, reject, link-local or multicast.
    static func routeInterfaces(ipv4: String, ipv6: String) -> Set<String> {
        let up: UInt32 = 0x0001, reject: UInt32 = 0x0200
        var names = Set<String>()
        for line in ipv4.split(separator: "\n").dropFirst() {
            let f = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard f.count >= 8, let destination = UInt32(f[1], radix: 16), let flags = UInt32(f[3], radix: 16) else { continue }
            // Little-endian: the first octet is the low byte.
            let first = destination & 0xFF, second = (destination >> 8) & 0xFF
            if first == 169 && second == 254 || (224...239).contains(first) || first == 127 { continue }
            if flags & up != 0, flags & reject == 0, f[0] != "lo" { names.insert(String(f[0])) }
        }
        for line in ipv6.split(separator: "\n") {
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            guard f.count >= 10, f[0].count == 32, let length = Int(f[1], radix: 16), let flags = UInt32(f[8], radix: 16),
                let top = UInt8(f[0].prefix(2), radix: 16)
            else { continue }
            // The default route, or a prefix of global unicast (2000::/3) or unique local (fc00::/7) addresses.
            let isDefault = length == 0 && f[0] == String(repeating: "0", count: 32)
            guard isDefault || (length > 0 && (top & 0xE0 == 0x20 || top & 0xFE == 0xFC)) else { continue }
            if flags & up != 0, flags & reject == 0, f[9] != "lo" { names.insert(String(f[9])) }
        }
        return names
    }
}
#endif
