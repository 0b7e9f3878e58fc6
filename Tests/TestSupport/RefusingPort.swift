package import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback port that refuses every connection and stays taken while this lives: a socket
/// bound to `127.0.0.1:0` that never listens. A stopped server's port is not this — a test
/// running beside it may bind the freed port at once and answer. (Not FlagServer's
/// `Socket.bound`: it sets `SO_REUSEADDR`, with which another socket may be given the port.)
package final class RefusingPort: Sendable {
    private let descriptor: Int32
    /// The port.
    package let port: UInt16

    /// Binds a free port, or nil when the socket cannot be made.
    package init?() {
        #if canImport(Darwin)
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #else
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                bind(fd, raw, length) == 0 && getsockname(fd, raw, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            return nil
        }
        descriptor = fd
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(descriptor) }

    /// `http://127.0.0.1:PORT/path`.
    package func url(_ path: String = "/flags") -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }
}
