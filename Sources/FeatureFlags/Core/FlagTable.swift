/// The flags a client serves: an immutable open-addressing hash table from name to entry, built
/// once per activation outside any lock. Not a `Dictionary` (SipHash dominates a read): a
/// ``FlagKey`` precomputes a cheap hash, seeded randomly per process so a service cannot force
/// collisions. Probing is linear, the table at most half full.
package final class FlagTable: @unchecked Sendable {
    // @unchecked: every field is written by `init` only, before the table is shared.

    /// One flag: hash, name, value, rare extras, and whether it is the snapshot's. Kept small.
    package struct Slot {
        let hash: Int
        package let name: String
        package let value: FlagValue?
        package let extras: FlagExtras?
        let fromSnapshot: Bool

        var variant: String? { extras?.variant }
        var reason: FlagReason? { extras?.reason }
        var errorCode: FlagErrorCode? { extras?.errorCode }
        var metadata: [String: FlagValue] { extras?.metadata ?? [:] }
    }

    /// The flags, densely, in insertion order.
    private let slots: UnsafeMutablePointer<Slot>
    /// `capacity` positions into `slots` (−1: empty), `capacity` a power of two ≥ 2 × count.
    private let index: UnsafeMutablePointer<Int32>
    private let mask: Int
    /// How many flags the table holds.
    package let count: Int

    /// No flags.
    package static let empty = FlagTable(snapshot: [:], defaults: [:])

    /// `snapshot`'s entries over `defaults`; valueless snapshot entries hide defaults too.
    package convenience init(snapshot: [String: FlagEntry], defaults: [String: FlagEntry]) {
        var total = snapshot.count
        for name in defaults.keys where snapshot[name] == nil { total += 1 }
        self.init(capacity: total) { (add) throws(Never) in
            for (name, entry) in defaults where snapshot[name] == nil { add(name, FlagNameHash.of(name), entry.value, FlagExtras.of(entry), false) }
            for (name, entry) in snapshot { add(name, FlagNameHash.of(name), entry.value, FlagExtras.of(entry), true) }
        }
    }

    /// `base`'s entries (all the snapshot's) over `defaults`, hashing only the defaults' names.
    package convenience init(_ base: FlagTable, over defaults: [String: FlagEntry]) {
        var hidden = 0
        for name in defaults.keys where base.slot(name, hash: FlagNameHash.of(name)) != nil { hidden += 1 }
        self.init(capacity: base.count + defaults.count - hidden) { (add) throws(Never) in
            for (name, entry) in defaults {
                let hash = FlagNameHash.of(name)
                if base.slot(name, hash: hash) == nil { add(name, hash, entry.value, FlagExtras.of(entry), false) }
            }
            for i in 0..<base.count {
                let slot = base.slots + i
                add(slot.pointee.name, slot.pointee.hash, slot.pointee.value, slot.pointee.extras, true)
            }
        }
    }

    /// A table of at most `capacity` flags added by `fill`; a name added again replaces its entry.
    /// One generic copy for every kind of failure (the work is in `fill` and the slots).
    @_semantics("optimize.sil.specialize.generic.never")
    package init<Failure: Error>(
        capacity total: Int,
        fill: (_ add: (String, Int, FlagValue?, FlagExtras?, Bool) -> Void) throws(Failure) -> Void
    ) throws(Failure) {
        var capacity = 8
        while capacity < total * 2 { capacity <<= 1 }
        let mask = capacity - 1
        let slots = UnsafeMutablePointer<Slot>.allocate(capacity: max(total, 1))
        let index = UnsafeMutablePointer<Int32>.allocate(capacity: capacity)
        index.initialize(repeating: -1, count: capacity)
        var filled = 0
        do {
            try fill { name, hash, value, extras, fromSnapshot in
                var position = hash & mask
                while true {
                    let found = Int(index[position])
                    if found < 0 { break }
                    let slot = slots + found
                    if slot.pointee.hash == hash, slot.pointee.name == name {
                        slot.pointee = Slot(hash: hash, name: name, value: value, extras: extras, fromSnapshot: fromSnapshot)
                        return
                    }
                    position = (position + 1) & mask
                }
                guard filled < total else {
                    assertionFailure("more flags than the table was sized for")
                    return
                }
                (slots + filled).initialize(to: Slot(hash: hash, name: name, value: value, extras: extras, fromSnapshot: fromSnapshot))
                index[position] = Int32(filled)
                filled += 1
            }
        } catch {
            slots.deinitialize(count: filled)
            slots.deallocate()
            index.deallocate()
            throw error
        }
        self.slots = slots
        self.index = index
        self.mask = mask
        self.count = filled
    }

    /// The `position`-th slot, in the order `fill` first added names.
    package func slot(at position: Int) -> UnsafePointer<Slot> {
        precondition(position >= 0 && position < count, "slot \(position) of \(count)")
        return UnsafePointer(slots + position)
    }

    /// The entry of `name`, as the snapshot or defaults gave it.
    package func entry(_ name: String) -> FlagEntry? {
        slot(name, hash: FlagNameHash.of(name)).map(Self.entry)
    }

    /// Every entry by name.
    package func dictionary() -> [String: FlagEntry] {
        var entries: [String: FlagEntry] = [:]
        entries.reserveCapacity(count)
        for i in 0..<count { entries[slots[i].name] = Self.entry(UnsafePointer(slots + i)) }
        return entries
    }

    /// Whether both tables hold the same names with the same entries.
    package func sameEntries(as other: FlagTable) -> Bool {
        guard count == other.count else { return false }
        for i in 0..<count {
            let slot = slots + i
            guard let theirs = other.slot(slot.pointee.name, hash: slot.pointee.hash), Self.sameEntry(slot, theirs),
                slot.pointee.fromSnapshot == theirs.pointee.fromSnapshot
            else { return false }
        }
        return true
    }

    private static func entry(_ slot: UnsafePointer<Slot>) -> FlagEntry {
        FlagEntry(
            value: slot.pointee.value, variant: slot.pointee.variant, reason: slot.pointee.reason, errorCode: slot.pointee.errorCode,
            metadata: slot.pointee.metadata)
    }

    deinit {
        slots.deinitialize(count: count)
        slots.deallocate()
        index.deallocate()
    }

    /// The slot of `name`, whose ``FlagNameHash`` is `hash`; nil when the table has none.
    @inline(__always)
    func slot(_ name: String, hash: Int) -> UnsafePointer<Slot>? {
        var position = hash & mask
        while true {
            let found = Int(index[position])
            if found < 0 { return nil }
            let slot = slots + found
            if slot.pointee.hash == hash, slot.pointee.name == name { return UnsafePointer(slot) }
            position = (position + 1) & mask
        }
    }

    /// Names added, removed or with a different entry since `old`; no name is hashed again.
    package func changedNames(since old: FlagTable) -> Set<String> {
        var changed = Set<String>()
        for i in 0..<count {
            let slot = slots + i
            guard let before = old.slot(slot.pointee.name, hash: slot.pointee.hash) else {
                changed.insert(slot.pointee.name)
                continue
            }
            if !Self.sameEntry(slot, before) { changed.insert(slot.pointee.name) }
        }
        if old.count > count - changed.count {
            for i in 0..<old.count {
                let slot = old.slots + i
                if self.slot(slot.pointee.name, hash: slot.pointee.hash) == nil { changed.insert(slot.pointee.name) }
            }
        }
        return changed
    }

    /// Whether two slots hold the same entry.
    @inline(__always)
    private static func sameEntry(_ a: UnsafePointer<Slot>, _ b: UnsafePointer<Slot>) -> Bool {
        guard a.pointee.value == b.pointee.value else { return false }
        switch (a.pointee.extras, b.pointee.extras) {
        case (nil, nil): return true
        case (let x?, let y?):
            return x === y
                || (x.variant == y.variant && x.reason == y.reason && x.errorCode == y.errorCode && x.metadata == y.metadata)
        default: return false
        }
    }

    /// What a plain read of `name` starts from: the entry's value, nil when missing or valueless.
    @inline(__always)
    package func value(_ name: String, hash: Int) -> FlagValue? {
        slot(name, hash: hash)?.pointee.value
    }
}

/// The per-process seeded hash a flag name is filed under, computed once per ``FlagKey``.
@usableFromInline
package enum FlagNameHash {
    /// Random per process: collisions cannot be chosen in advance.
    private static let seed = UInt64.random(in: 1...UInt64.max)

    /// The hash of `name`'s UTF-8 bytes.
    @usableFromInline
    package static func of(_ name: String) -> Int {
        if let hash = name.utf8.withContiguousStorageIfAvailable({ of(UnsafeRawBufferPointer($0)) }) { return hash }
        let bytes = Array(name.utf8)
        return bytes.withUnsafeBytes { of($0) }
    }

    /// The hash of a name's UTF-8 bytes, given as bytes.
    static func of(_ bytes: UnsafeRawBufferPointer) -> Int {
        var h = seed ^ (UInt64(bytes.count) &* 0x9E37_79B9_7F4A_7C15)
        var i = 0
        let n = bytes.count
        while i + 8 <= n {
            h = (h ^ UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))) &* 0xFF51_AFD7_ED55_8CCD
            h ^= h >> 32
            i += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while i < n {
            tail |= UInt64(bytes[i]) << shift
            shift += 8
            i += 1
        }
        h = (h ^ tail) &* 0xC4CE_B9FE_1A85_EC53
        h ^= h >> 33
        h &*= 0xFF51_AFD7_ED55_8CCD
        h ^= h >> 33
        return Int(truncatingIfNeeded: h)
    }
}
