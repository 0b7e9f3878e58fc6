#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The server's open connections and which of them are stalled, and since when — the basis
/// for admitting a new connection when every place is taken. A connection is stalled while it
/// waits for a request (idle, or a header still arriving: bytes that trickle in do not count)
/// and while a write of its answer waits for the peer to read; it is working from the moment a
/// whole request has arrived until its answer is written. Working connections are never evicted.
struct ConnectionTable {
    private struct Entry {
        /// Nil while working.
        var stalledSince: ContinuousClock.Instant?
        /// Shut down to make room; its thread is finishing, and its place is already given away.
        var evicted = false
        /// A change stream: counted apart from the places, never stalled, never evicted.
        var streaming = false
    }

    private var entries: [Int32: Entry] = [:]
    /// Connections closed to make room, since the server started.
    private(set) var evictions = 0
    /// Change streams open now.
    private(set) var streams = 0

    /// Open connections, evicted ones still finishing included.
    var count: Int { entries.count }

    /// Connections stalled now (evicted ones excluded).
    var stalledCount: Int { entries.values.filter { !$0.evicted && !$0.streaming && $0.stalledSince != nil }.count }

    /// Every open descriptor.
    var descriptors: [Int32] { Array(entries.keys) }

    /// Admits `fd` if fewer than `limit` connections hold a place; otherwise evicts the
    /// connection stalled longest, when it has been stalled for at least `grace`, and admits
    /// `fd` in its place. False when there is no room (the caller answers 503). Evicted
    /// connections still finishing may number at most `limit`, so the threads stay bounded.
    mutating func admit(_ fd: Int32, limit: Int, at now: ContinuousClock.Instant, stalledFor grace: Duration) -> Bool {
        let placed = entries.values.filter { !$0.evicted && !$0.streaming }.count
        if placed >= limit {
            var victim: (fd: Int32, since: ContinuousClock.Instant)?
            for (candidate, entry) in entries where !entry.evicted && !entry.streaming {
                guard let since = entry.stalledSince else { continue }
                if victim.map({ since < $0.since }) ?? true { victim = (candidate, since) }
            }
            guard entries.count - streams < 2 * limit, let victim, now - victim.since >= grace else { return false }
            entries[victim.fd]?.evicted = true
            evictions += 1
            // Wakes the victim's thread wherever it waits (reading, writing, holding): every
            // wait and write on it now fails, and the thread removes it from the table.
            shutdown(victim.fd, Int32(SHUT_RDWR))
        }
        entries[fd] = Entry(stalledSince: now)
        return true
    }

    /// `fd` is working (a whole request arrived, or its answer's bytes move again).
    mutating func working(_ fd: Int32) {
        entries[fd]?.stalledSince = nil
    }

    /// `fd` is stalled from `now` (waiting for its next request, or for the peer to read),
    /// unless it already was.
    mutating func stalled(_ fd: Int32, at now: ContinuousClock.Instant) {
        if entries[fd]?.streaming == true { return }
        if entries[fd]?.stalledSince == nil { entries[fd]?.stalledSince = now }
    }

    /// Whether one more stream would be admitted under `limit` (what a `HEAD` of a stream says).
    func admitsStream(limit: Int) -> Bool { streams < limit }

    /// Makes `fd` a change stream, which gives its place back: false when `limit` streams are
    /// open already.
    mutating func startStream(_ fd: Int32, limit: Int) -> Bool {
        guard streams < limit, let entry = entries[fd], !entry.streaming else { return false }
        entries[fd]?.streaming = true
        entries[fd]?.stalledSince = nil
        streams += 1
        return true
    }

    /// Forgets `fd` (its thread has finished with it).
    mutating func remove(_ fd: Int32) {
        if entries[fd]?.streaming == true { streams -= 1 }
        entries[fd] = nil
    }
}
