import Foundation

#if canImport(Synchronization)
import Synchronization
#endif

/// An immutable object that one writer at a time replaces and any number of threads read
/// without contending with each other: the read side of every client's served state.
///
/// Each thread keeps, per publication, the object it last read and the generation it was
/// published under, in a small thread-local table. A read loads the publication's generation
/// (one atomic load, `acquiring`) and, when it equals the thread's cached one, uses the cached
/// object: no lock, no reference-count traffic on shared memory, nothing written that another
/// thread reads. Otherwise (after a publish, or the first read on a thread) it takes the lock,
/// copies the current object and its generation into its table, and uses that.
///
/// `publish` replaces the object and increments the generation inside the lock, so the pair
/// read under the lock always belongs together; a writer pays the lock, readers after a
/// publish pay it once each. Docs/Architecture.md gives the memory-ordering argument.
///
/// Where `Synchronization` is unavailable (before iOS 18 / macOS 15 / tvOS 18 / watchOS 11)
/// there is no atomic to load, and every read takes the lock: correct, uncontended as long as
/// one thread reads, and still separate from the owner's state lock.
///
/// Memory: a thread's table holds up to ``ThreadReadCache/slotCount`` objects — of live or
/// already released publications — until the thread reads again or exits.
package final class ReadPublication<Object: AnyObject & Sendable>: @unchecked Sendable {
    // @unchecked: `current` is read and written only while holding `lock`; `id`, `cacheKey`
    // and `counter` never change (the generation inside `counter` is atomic); thread caches are
    // touched only by their own thread.
    /// Unique for the life of the process (never reused, unlike an address).
    private let id: Int
    private let lock = NSLock()
    private var current: Object
    /// The generation counter (`AtomicGeneration`), where the OS has `Synchronization`;
    /// retained by `init`, released by `deinit` (unmanaged so that a read does not retain it).
    private let counter: Unmanaged<AnyObject>?
    /// The thread-local key, copied so that a read does not check a global's initialisation.
    private let cacheKey: ThreadReadCache.Key

    /// Publishes `initial`.
    package init(_ initial: Object) {
        current = initial
        id = ThreadReadCache.nextPublicationID()
        cacheKey = ThreadReadCache.key
        #if canImport(Synchronization)
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) {
            counter = .passRetained(AtomicGeneration())
        } else {
            counter = nil
        }
        #else
        counter = nil
        #endif
    }

    /// Runs `body` with the object published now. `body` must not keep the object beyond its
    /// return (it is lent, not retained, on the fast path).
    @inline(__always)
    package func read<R>(_ body: (Object) -> R) -> R {
        #if canImport(Synchronization)
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *), let counter {
            let generation = counter._withUnsafeGuaranteedRef {
                unsafeDowncast($0, to: AtomicGeneration.self).value.load(ordering: .acquiring)
            }
            if let slots = ThreadReadCache.slots(cacheKey) {
                let slot = slots + (id & ThreadReadCache.slotMask)
                if slot.pointee.id == id, slot.pointee.generation == generation, let cached = slot.pointee.object {
                    return cached._withUnsafeGuaranteedRef { body(unsafeDowncast($0, to: Object.self)) }
                }
            }
            return body(refresh())
        }
        #endif
        return body(lock.withLock { current })
    }

    /// The object published now (retained: for callers that keep it).
    package var object: Object { read { $0 } }

    /// Replaces the object. Callers serialise their publishes (they hold their state lock).
    package func publish(_ object: Object) {
        lock.withLock {
            current = object
            #if canImport(Synchronization)
            if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *), let counter {
                _ = counter._withUnsafeGuaranteedRef {
                    unsafeDowncast($0, to: AtomicGeneration.self).value.add(1, ordering: .releasing)
                }
            }
            #endif
        }
    }

    deinit {
        counter?.release()
        // The thread that lets the publication go usually read it last: free its copy now
        // rather than when another publication takes the slot (other threads' copies wait).
        ThreadReadCache.forget(id: id, key: cacheKey)
    }

    /// Whether nothing was published since `init` — one relaxed atomic load where the OS has
    /// `Synchronization` (a cheap "still the initial object?" for callers whose initial object
    /// means "nothing to do"); false where it cannot tell.
    @inline(__always)
    package var isPristine: Bool {
        #if canImport(Synchronization)
        if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *), let counter {
            return counter._withUnsafeGuaranteedRef {
                unsafeDowncast($0, to: AtomicGeneration.self).value.load(ordering: .relaxed)
            } == 0
        }
        #endif
        return false
    }

    /// The slow path: the current object and its generation, read together under the lock and
    /// stored in this thread's table.
    @inline(never)
    private func refresh() -> Object {
        var generation = 0
        let object: Object = lock.withLock {
            #if canImport(Synchronization)
            if #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *), let counter {
                generation = counter._withUnsafeGuaranteedRef {
                    unsafeDowncast($0, to: AtomicGeneration.self).value.load(ordering: .relaxed)
                }
            }
            #endif
            return current
        }
        ThreadReadCache.store(object, generation: generation, id: id, key: cacheKey)
        return object
    }
}

#if canImport(Synchronization)
/// A publication's generation, boxed so that the publication itself needs no availability.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
private final class AtomicGeneration: Sendable {
    /// Starts at 1: an empty thread-cache slot has generation 0 and never matches.
    let value = Atomic<Int>(1)
}
#endif

/// Each thread's table of the objects it last read from publications: ``slotCount`` slots,
/// a publication's slot chosen by its id. Two publications sharing a slot only cost each other
/// slow reads.
package enum ThreadReadCache {
    /// A slot: which publication, under which generation, and the object (retained).
    struct Slot {
        var id = 0
        var generation = 0
        var object: Unmanaged<AnyObject>?
    }

    typealias Key = pthread_key_t

    /// Slots per thread.
    package static let slotCount = 16
    static let slotMask = slotCount - 1

    /// The thread-local key; its destructor releases a thread's objects when the thread ends.
    static let key: Key = {
        var key = Key()
        let status = pthread_key_create(&key) { argument in
            // Optional on Linux, not on Apple platforms: promote to one type for both.
            let pointer: UnsafeMutableRawPointer? = argument
            guard let raw = pointer else { return }
            let slots = raw.assumingMemoryBound(to: Slot.self)
            for index in 0..<ThreadReadCache.slotCount { slots[index].object?.release() }
            slots.deinitialize(count: ThreadReadCache.slotCount)
            slots.deallocate()
        }
        // Only when the process has used up its thread-local keys (1,024 on Linux): reads
        // still work, through the slow path every time.
        if status != 0 { key = Key(bitPattern: -1) }
        return key
    }()

    private static let ids = Locked(0)

    /// A new publication's id.
    static func nextPublicationID() -> Int {
        ids.withLock { id in
            id += 1
            return id
        }
    }

    /// This thread's slots, nil before its first read.
    @inline(__always)
    static func slots(_ key: Key) -> UnsafeMutablePointer<Slot>? {
        pthread_getspecific(key)?.assumingMemoryBound(to: Slot.self)
    }

    /// Empties this thread's slot for publication `id`, if it holds it.
    static func forget(id: Int, key: Key) {
        guard let slots = slots(key) else { return }
        let slot = slots + (id & slotMask)
        guard slot.pointee.id == id else { return }
        let old = slot.pointee.object
        slot.pointee = Slot()
        old?.release()
    }

    /// Remembers `object` as publication `id`'s object under `generation` on this thread.
    static func store(_ object: AnyObject, generation: Int, id: Int, key: Key) {
        guard generation != 0 else { return }
        var slots = self.slots(key)
        if slots == nil {
            let fresh = UnsafeMutablePointer<Slot>.allocate(capacity: slotCount)
            fresh.initialize(repeating: Slot(), count: slotCount)
            guard pthread_setspecific(key, fresh) == 0 else {
                fresh.deinitialize(count: slotCount)
                fresh.deallocate()
                return
            }
            slots = fresh
        }
        guard let slots else { return }
        let slot = slots + (id & slotMask)
        let old = slot.pointee.object
        slot.pointee = Slot(id: id, generation: generation, object: .passRetained(object))
        old?.release()
    }
}
