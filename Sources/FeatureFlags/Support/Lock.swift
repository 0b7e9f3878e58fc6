import Foundation

/// A mutex around one value. `NSLock` rather than `Synchronization.Mutex`, which needs
/// iOS 18 / macOS 15; measured here it is also the faster of the two (DESIGN §4).
///
/// Never hold it across `await`, never call out to user code while holding it.
package final class Locked<State>: @unchecked Sendable {
    // @unchecked: `state` is only touched inside `withLock`, which holds `lock` for the
    // whole access, so no two threads see it at once.
    private let lock = NSLock()
    private var state: State

    /// Wraps `initial`.
    package init(_ initial: State) { state = initial }

    /// Runs `body` with exclusive access to the state.
    @inline(__always)
    package func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
