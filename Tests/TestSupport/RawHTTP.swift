import Foundation
import FlagServer
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A bare TCP client for requests URLSession would not send (huge headers, idle sockets).
package final class RawConnection: Sendable {
    package let fd: Int32

    /// Connects to `127.0.0.1:port`; nil if refused. `receiveBufferBytes` shrinks the socket's
    /// receive buffer (a client that does not read then stalls the server's writes sooner).
    package init?(port: UInt16, receiveBufferBytes: Int32? = nil) {
        guard let fd = LoopbackSocket.connect(port: port, receiveBufferBytes: receiveBufferBytes) else { return nil }
        self.fd = fd
    }

    deinit { close(fd) }

    @discardableResult
    package func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { LoopbackSocket.send(fd, $0) }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    /// Everything received until the peer closes or `timeout` passes with nothing new.
    package func receive(timeout: Int32 = 2_000) -> String {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, timeout) > 0 else { break }
            let n = recv(fd, &chunk, chunk.count, 0)
            if n <= 0 { break }
            out.append(contentsOf: chunk[0..<n])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// What arrives next: some bytes; empty if nothing came within `timeout` milliseconds; nil
    /// once the peer has closed.
    package func receiveSome(timeout: Int32) -> [UInt8]? {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, timeout) > 0 else { return [] }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let n = recv(fd, &chunk, chunk.count, 0)
        return n > 0 ? Array(chunk[0..<n]) : nil
    }

    /// The status code of the first response line received within `timeout`.
    package func status(timeout: Int32 = 2_000) -> Int? {
        var out: [UInt8] = []
        var byte: UInt8 = 0
        while !out.contains(10) {
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&p, 1, timeout) > 0, recv(fd, &byte, 1, 0) == 1 else { return nil }
            out.append(byte)
        }
        let line = String(decoding: out, as: UTF8.self).split(separator: " ")
        return line.count > 1 ? Int(line[1]) : nil
    }
}
