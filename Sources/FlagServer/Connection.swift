/// One accepted connection as its serving thread sees it: the socket, the server's stop
/// signal, and how long a write may wait for a peer that does not read.
struct Connection: Sendable {
    let fd: Int32
    /// The read end of the server's stop pipe: every wait on this connection also watches it.
    let stopFD: Int32
    /// How long one write may wait for the peer to make room (the server's send timeout).
    let sendTimeoutMilliseconds: Int32
    /// Runs with true when a write starts waiting for the peer to read (the connection is
    /// stalled from then on), with false when its bytes move again.
    let blocked: @Sendable (Bool) -> Void

    /// Writes every byte; false if the peer went away, stopped reading for longer than the
    /// send timeout, or the server stopped.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool { send(bytes[...]) }

    /// Writes every byte of a slice (see ``send(_:)-([UInt8])``).
    @discardableResult
    func send(_ bytes: ArraySlice<UInt8>) -> Bool {
        Socket.send(fd, bytes, stopFD: stopFD, timeoutMilliseconds: sendTimeoutMilliseconds, blocked: blocked)
    }
}
