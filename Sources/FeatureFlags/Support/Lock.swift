import Foundation

/// A mutex around one value (`NSLock`: `Mutex` needs iOS 18); copies share lock and value. Non-generic storage avoids
/// runtime generic instantiation. Never hold it across `await` or while calling user code.
package struct Locked<State>: @unchecked Sendable {
    // @unchecked: the value is dereferenced only inside `withLock`, under the storage's lock.
    private let storage: LockedStorage

    /// Wraps `initial`.
    package init(_ initial: State) {
        let value = UnsafeMutablePointer<State>.allocate(capacity: 1)
        value.initialize(to: initial)
        storage = LockedStorage(UnsafeMutableRawPointer(value)) { raw in
            let typed = raw.assumingMemoryBound(to: State.self)
            typed.deinitialize(count: 1)
            typed.deallocate()
        }
    }

    /// Runs `body` with exclusive access to the state.
    @inline(__always)
    package func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        storage.lock.lock()
        defer { storage.lock.unlock() }
        return try body(&storage.value.assumingMemoryBound(to: State.self).pointee)
    }
}

/// The lock and the memory of a ``Locked`` value, and how to destroy that value.
final class LockedStorage: @unchecked Sendable {
    // @unchecked: `value` is dereferenced only under `lock` (`Locked.withLock`) or in `deinit`.
    let lock = NSLock()
    let value: UnsafeMutableRawPointer
    private let destroy: (UnsafeMutableRawPointer) -> Void

    init(_ value: UnsafeMutableRawPointer, destroy: @escaping (UnsafeMutableRawPointer) -> Void) {
        self.value = value
        self.destroy = destroy
    }

    deinit { destroy(value) }
}
