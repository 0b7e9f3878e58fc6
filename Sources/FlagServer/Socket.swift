import FeatureFlags
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Thin POSIX socket helpers for the loopback server. Every wait also watches `stopFD`
/// (the read end of a pipe that becomes readable when the server stops), so no thread
/// outlives ``FlagServer/stop()``.
enum Socket {
    struct Failure: Error, CustomStringConvertible {
        let operation: String
        let code: Int32
        var description: String { "\(operation): \(String(cString: strerror(code)))" }
    }

    /// A listening TCP socket on `host:port` (port 0 = any free port); returns it and the port.
    /// `sharing`: the port of a reservation (see ``bound(host:port:sharing:)``).
    static func listen(host: String, port: UInt16, backlog: Int32 = 64, sharing: Bool = false) throws(Failure) -> (Int32, UInt16) {
        let (fd, actual) = try bound(host: host, port: port, sharing: sharing)
        guard systemListen(fd, backlog) == 0 else {
            let code = errno
            close(fd)
            throw Failure(operation: "listen", code: code)
        }
        return (fd, actual)
    }

    /// A TCP socket bound to `host:port` with `SO_REUSEADDR`, not listening (port 0 = any
    /// free port); returns it and the port. `sharing` adds `SO_REUSEPORT`: the socket may bind
    /// a port a listener holds that allows it too (see ``allowSharing(_:)``).
    static func bound(host: String, port: UInt16, sharing: Bool = false) throws(Failure) -> (Int32, UInt16) {
        guard var address = address(host, port) else { throw Failure(operation: "inet_pton \(host)", code: EINVAL) }
        let fd = LoopbackSocket.make()
        guard fd >= 0 else { throw Failure(operation: "socket", code: errno) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        if sharing { allowSharing(fd) }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw Failure(operation: "bind", code: code)
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, UInt16(bigEndian: actual.sin_port))
    }

    /// Lets a socket bound with `sharing` bind `fd`'s port while `fd` still holds it
    /// (`SO_REUSEPORT`): set on a listener about to close, so that its port passes to a
    /// reservation without an instant in which it is free.
    static func allowSharing(_ fd: Int32) {
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &yes, socklen_t(MemoryLayout<Int32>.size))
    }

    /// The IPv4 socket address `host:port`; nil if `host` is not an IPv4 address.
    static func address(_ host: String, _ port: UInt16) -> sockaddr_in? {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        return inet_pton(AF_INET, host, &address.sin_addr) == 1 ? address : nil
    }

    enum Wait { case ready, stopped, timedOut, failed }

    /// Waits until `fd` is readable (or hung up), the server stops, or `milliseconds` pass (-1 = forever).
    static func waitReadable(_ fd: Int32, stopFD: Int32, milliseconds: Int32) -> Wait {
        wait(fd, for: Int16(POLLIN), stopFD: stopFD, milliseconds: milliseconds)
    }

    /// Waits until `fd` can take more bytes (or failed), the server stops, or `milliseconds` pass.
    static func waitWritable(_ fd: Int32, stopFD: Int32, milliseconds: Int32) -> Wait {
        wait(fd, for: Int16(POLLOUT), stopFD: stopFD, milliseconds: milliseconds)
    }

    private static func wait(_ fd: Int32, for events: Int16, stopFD: Int32, milliseconds: Int32) -> Wait {
        var fds = [pollfd(fd: fd, events: events, revents: 0), pollfd(fd: stopFD, events: Int16(POLLIN), revents: 0)]
        while true {
            let n = poll(&fds, 2, milliseconds)
            if n < 0 {
                if errno == EINTR { continue }
                return .failed
            }
            if n == 0 { return .timedOut }
            if fds[1].revents != 0 { return .stopped }
            return .ready
        }
    }

    /// Sleeps up to `milliseconds`, returning early (false) when the server stops or the peer
    /// closes `fd`.
    static func pause(milliseconds: Int, connection fd: Int32, stopFD: Int32) -> Bool {
        var remaining = milliseconds
        while remaining > 0 {
            let slice = Int32(min(remaining, 100))
            switch waitReadable(fd, stopFD: stopFD, milliseconds: slice) {
            case .timedOut: remaining -= Int(slice)
            case .ready:
                if peerClosed(fd) { return false }
                remaining -= Int(slice)
            default: return false
            }
        }
        return true
    }

    /// Whether the peer has closed: readable with nothing to read.
    static func peerClosed(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
    }

    /// Waits until the peer closes `fd` or the server stops.
    static func holdUntilClosed(_ fd: Int32, stopFD: Int32) {
        while true {
            switch waitReadable(fd, stopFD: stopFD, milliseconds: 1_000) {
            case .timedOut: continue
            case .ready:
                if peerClosed(fd) { return }
                // The client sent more (a pipelined request): drain and keep holding.
                var scratch = [UInt8](repeating: 0, count: 4_096)
                if recv(fd, &scratch, scratch.count, 0) <= 0 { return }
            default: return
            }
        }
    }

    /// Reads and drops whatever has arrived on `fd`, without waiting (at most 64 KiB).
    static func discardPending(_ fd: Int32) {
        var scratch = [UInt8](repeating: 0, count: 16_384)
        for _ in 0..<4 where recv(fd, &scratch, scratch.count, Int32(MSG_DONTWAIT)) > 0 {}
    }

    /// Ends a connection before its `close` so that the last answer survives: says FIN, then
    /// reads and drops what the client still sends until it closes too — at most 256 KiB and
    /// 500 ms — since closing with unread bytes resets the connection, and a reset can destroy
    /// an answer (a 408 or a 413) before the client reads it. Does nothing when the
    /// connection is to be reset on purpose (``resetOnClose(_:)``).
    static func finish(_ fd: Int32, stopFD: Int32) {
        var value = linger()
        var length = socklen_t(MemoryLayout<linger>.size)
        if getsockopt(fd, SOL_SOCKET, SO_LINGER, &value, &length) == 0, value.l_onoff != 0, value.l_linger == 0 { return }
        guard shutdown(fd, Int32(SHUT_WR)) == 0 else { return }
        let deadline = ContinuousClock.now + .milliseconds(500)
        var scratch = [UInt8](repeating: 0, count: 16_384)
        var drained = 0
        while drained < 256 << 10 {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero, waitReadable(fd, stopFD: stopFD, milliseconds: left.pollMilliseconds + 1) == .ready else { return }
            let n = recv(fd, &scratch, scratch.count, Int32(MSG_DONTWAIT))
            if n <= 0 { return }
            drained += n
        }
    }

    /// Makes the next `close` of `fd` reset the connection (RST) instead of ending it (FIN).
    static func resetOnClose(_ fd: Int32) {
        var value = linger()
        value.l_onoff = 1
        value.l_linger = 0
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &value, socklen_t(MemoryLayout<linger>.size))
    }

    /// Writes every byte; false if the peer went away, the server stopped, or the peer read
    /// nothing for `timeoutMilliseconds` while the socket's send buffer was full (a client
    /// that never reads cannot hold a thread). `blocked` runs with true when a write starts
    /// waiting for the peer to read, and with false when bytes move again.
    @discardableResult
    static func send(
        _ fd: Int32, _ bytes: ArraySlice<UInt8>, stopFD: Int32, timeoutMilliseconds: Int32,
        blocked: (Bool) -> Void = { _ in }
    ) -> Bool {
        var offset = bytes.startIndex
        var waiting = false
        while offset < bytes.endIndex {
            let n = bytes[offset...].withUnsafeBytes { raw in
                sendNoSignal(fd, raw.baseAddress, raw.count)
            }
            if n >= 0 {
                offset += n
                if waiting {
                    waiting = false
                    blocked(false)
                }
                continue
            }
            switch errno {
            case EINTR:
                continue
            case EAGAIN, EWOULDBLOCK:
                if !waiting {
                    waiting = true
                    blocked(true)
                }
                guard waitWritable(fd, stopFD: stopFD, milliseconds: timeoutMilliseconds) == .ready else { return false }
            default:
                return false
            }
        }
        return true
    }

    /// One non-blocking write that never raises SIGPIPE.
    private static func sendNoSignal(_ fd: Int32, _ base: UnsafeRawPointer?, _ count: Int) -> Int {
        #if canImport(Darwin)
        return Darwin.send(fd, base, count, Int32(MSG_DONTWAIT))
        #elseif canImport(Musl)
        return Musl.send(fd, base, count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        #else
        return Glibc.send(fd, base, count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        #endif
    }
}

/// Raw TCP sockets on every platform's C library, for the server and for the package's tests
/// and benchmarks, which talk to it byte by byte.
package enum LoopbackSocket {
    /// A new TCP socket (close-on-exec; no SIGPIPE on Apple platforms); -1 on failure.
    package static func make() -> Int32 {
        #if canImport(Darwin)
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        if fd >= 0 {
            var yes: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &yes, socklen_t(MemoryLayout<Int32>.size))
        }
        return fd
        #elseif canImport(Musl)
        return socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)
        #else
        return socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #endif
    }

    /// A connection to `127.0.0.1:port`; nil if refused. `receiveBufferBytes` shrinks its
    /// receive buffer (a client that does not read then stalls the server's writes sooner).
    package static func connect(port: UInt16, receiveBufferBytes: Int32? = nil) -> Int32? {
        let fd = make()
        guard fd >= 0 else { return nil }
        if var size = receiveBufferBytes {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        guard var address = Socket.address("127.0.0.1", port) else {
            close(fd)
            return nil
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { systemConnect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// One blocking `send` that never raises SIGPIPE: bytes sent, or -1.
    package static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        #if canImport(Darwin)
        return Darwin.send(fd, bytes.baseAddress, bytes.count, 0)
        #elseif canImport(Musl)
        return Musl.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
        #else
        return Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
        #endif
    }
}

/// A TCP port held by a socket that is bound but not listening: connecting to it is refused,
/// and a server asking for any free port (port 0) is never given it meanwhile (parallel tests
/// create servers on free ports all the time); a server asking for this port by number still
/// gets it. For tests that take a server down and bring it back.
package final class PortReservation: Sendable {
    package let fd: Int32
    package let port: UInt16

    /// Reserves `port` on 127.0.0.1 (0: any free port); nil if it is taken. `sharing`: the
    /// port of a listener that allowed it (``Socket/allowSharing(_:)``), taken over before the
    /// listener closes.
    package init?(port requested: UInt16 = 0, sharing: Bool = false) {
        guard let (fd, port) = try? Socket.bound(host: "127.0.0.1", port: requested, sharing: sharing) else { return nil }
        self.fd = fd
        self.port = port
    }

    deinit { close(fd) }
}

#if canImport(Darwin)
private func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 { Darwin.connect(fd, address, length) }
#elseif canImport(Musl)
private func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 { Musl.connect(fd, address, length) }
#else
private func systemConnect(_ fd: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 { Glibc.connect(fd, address, length) }
#endif

#if canImport(Darwin)
private func systemListen(_ fd: Int32, _ backlog: Int32) -> Int32 { Darwin.listen(fd, backlog) }
#elseif canImport(Musl)
private func systemListen(_ fd: Int32, _ backlog: Int32) -> Int32 { Musl.listen(fd, backlog) }
#else
private func systemListen(_ fd: Int32, _ backlog: Int32) -> Int32 { Glibc.listen(fd, backlog) }
#endif
