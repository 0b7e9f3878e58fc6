/// The server's request log: the last `capacity` requests in a ring, plus how many arrived in
/// all. Bounded, so a server answering for days keeps a constant amount of memory.
struct RequestLog {
    /// How many records are kept.
    let capacity: Int
    /// Requests logged since the start (or the last clear).
    private(set) var total = 0
    /// The kept records; record `i` lives at `i % capacity`.
    private var storage: [RequestRecord] = []

    init(capacity: Int) { self.capacity = max(1, capacity) }

    /// Adds the record `make` builds for the next index; returns that index.
    mutating func append(_ make: (Int) -> RequestRecord) -> Int {
        let index = total
        total += 1
        if storage.count < capacity {
            storage.append(make(index))
        } else {
            storage[index % capacity] = make(index)
        }
        return index
    }

    /// Changes record `index` if it is still kept; returns it after the change.
    mutating func update(_ index: Int, _ change: (inout FlagServer.RequestRecord) -> Void) -> FlagServer.RequestRecord? {
        guard index >= total - storage.count, index < total else { return nil }
        let position = index % capacity
        guard storage[position].index == index else { return nil }
        change(&storage[position])
        return storage[position]
    }

    /// The kept records, oldest first.
    var records: [FlagServer.RequestRecord] {
        guard storage.count == capacity else { return storage }
        let oldest = total % capacity
        return Array(storage[oldest...] + storage[..<oldest])
    }

    /// Forgets everything.
    mutating func clear() {
        total = 0
        storage.removeAll()
    }
}

typealias RequestRecord = FlagServer.RequestRecord
