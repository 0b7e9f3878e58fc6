import Foundation

/// A mutex around one value. `NSLock` rather than `Synchronization.Mutex`, which needs
/// iOS 18 / macOS 15; measured on Linux it is also the faster of the two (7–11 ns against 17–21 ns).
///
/// The value lives in memory the lock's storage allocates and owns, not in a stored `var`, so
/// accesses skip Swift's dynamic exclusivity bookkeeping — the lock already guarantees it.
/// A struct with one non-generic storage object, not a generic class: each generic class is
/// instantiated at run time the first time a process uses it with a new type, about 1.5 µs
/// apiece — and a provider's start met about twenty of them. Copies share the storage (the
/// same lock, the same value). Never hold it across `await`, never call out to user code while
/// holding it.
package struct Locked<State>: @unchecked Sendable {
    // @unchecked: the value is dereferenced only inside `withLock`, which holds the storage's
    // lock for the whole access, so no two threads ever touch it at once.
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
    // @unchecked: `value` is only dereferenced by `Locked.withLock` under `lock`, and by
    // `deinit`, when no other reference exists.
    let lock = NSLock()
    let value: UnsafeMutableRawPointer
    private let destroy: (UnsafeMutableRawPointer) -> Void

    init(_ value: UnsafeMutableRawPointer, destroy: @escaping (UnsafeMutableRawPointer) -> Void) {
        self.value = value
        self.destroy = destroy
    }

    deinit { destroy(value) }
}
