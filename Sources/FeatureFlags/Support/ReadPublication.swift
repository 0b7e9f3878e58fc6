import Foundation

/// An immutable object that one writer at a time replaces and any number of threads read
/// without contending: the read side of every client's served state.
///
/// Each thread caches, per publication, the object it last read (retained; up to
/// ``ThreadReadCache/slotCount`` per thread) in a thread-local table; the publication keeps its
/// current object's address in one word. A read loads that word (acquiring) and, if it is the
/// cached object's address, uses the cached object lock-free; otherwise it refreshes under the lock.
///
/// Why an address is enough: the table keeps the cached object alive, so no other object can
/// have its address; the address is only compared, never dereferenced. `publish` stores it
/// inside the lock, so a refresh caches the object matching its address (Docs/Architecture.md).
internal struct ReadPublication<Object: AnyObject & Sendable>: Sendable {
    private let storage: PublicationStorage

    /// Publishes `initial`.
    package init(_ initial: Object) { storage = PublicationStorage(initial) }

    /// Runs `body` with the object published now; `body` must not keep it (lent, not retained).
    @inline(__always)
    package func read<R>(_ body: (Object) -> R) -> R {
        let storage = storage
        if let slots = ThreadReadCache.slots(storage.cacheKey) {
            let slot = slots + (storage.id & ThreadReadCache.slotMask)
            if slot.pointee.id == storage.id, let cached = slot.pointee.object, cached.toOpaque() == storage.publishedAddress {
                return cached._withUnsafeGuaranteedRef { body(unsafeDowncast($0, to: Object.self)) }
            }
        }
        return body(unsafeDowncast(storage.refresh(), to: Object.self))
    }

    /// Replaces the object. Callers serialise their publishes (they hold their state lock).
    package func publish(_ object: Object) { storage.publish(object) }

    /// Whether the object published now is the one `init` published (one atomic load).
    @inline(__always)
    package var isPristine: Bool { storage.publishedAddress.map(UnsafeRawPointer.init) == storage.initialAddress }
}

/// A ``ReadPublication``'s state: the current object, its address in one word, the lock.
final class PublicationStorage: @unchecked Sendable {
    // @unchecked: `current` is only touched under `lock`, other properties never change, the
    // `published` word is written under `lock` and read atomically; thread caches stay per-thread.
    /// Unique for the life of the process (never reused, unlike an address).
    let id: Int
    private let lock = NSLock()
    private var current: AnyObject
    /// One word: the address of `current` (bits only: it holds no reference).
    private let published: UnsafeMutablePointer<UnsafeRawPointer?>
    /// The address of the object published by `init`.
    let initialAddress: UnsafeRawPointer
    /// The thread-local key, copied so that a read does not check a global's initialisation.
    let cacheKey: ThreadReadCache.Key

    init(_ initial: AnyObject) {
        current = initial
        id = ThreadReadCache.nextPublicationID()
        cacheKey = ThreadReadCache.key
        initialAddress = UnsafeRawPointer(Unmanaged.passUnretained(initial).toOpaque())
        published = .allocate(capacity: 1)
        published.initialize(to: initialAddress)
    }

    /// The word `published`, loaded atomically with acquiring order.
    @inline(__always)
    var publishedAddress: UnsafeMutableRawPointer? {
        published.withMemoryRebound(to: AnyObject?.self, capacity: 1) { word in
            _stdlib_atomicAcquiringLoadARCRef(object: word)?.toOpaque()
        }
    }

    func publish(_ object: AnyObject) {
        lock.withLock {
            current = object
            let address = UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
            // Atomic store via compare-and-swap, the stdlib's only public atomic write.
            var expected = published.pointee
            while !_stdlib_atomicCompareExchangeStrongPtr(object: published, expected: &expected, desired: address) {}
        }
    }

    deinit {
        published.deallocate()
        // Free this thread's copy now; other threads' copies wait for their slot's reuse.
        ThreadReadCache.forget(id: id, key: cacheKey)
    }

    /// The slow path: the current object, read under the lock and stored in this thread's table.
    @inline(never)
    func refresh() -> AnyObject {
        let object: AnyObject = lock.withLock { current }
        ThreadReadCache.store(object, id: id, key: cacheKey)
        return object
    }
}

/// Each thread's table of last-read objects: ``slotCount`` slots chosen by publication id.
internal enum ThreadReadCache {
    /// A slot: which publication, and the object it read last (retained).
    struct Slot {
        var id = 0
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
        // Out of thread-local keys: reads still work, through the slow path every time.
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

    /// Remembers `object` as publication `id`'s object on this thread.
    static func store(_ object: AnyObject, id: Int, key: Key) {
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
        slot.pointee = Slot(id: id, object: .passRetained(object))
        old?.release()
    }
}
