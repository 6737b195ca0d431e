/// A least-recently-used map with an exact byte budget: every entry costs `cost` bytes as its owner declares it
/// (value bytes + key bytes + a fixed overhead for Ferry's cache), and the total never exceeds the budget.
///
/// O(1) `get`, `set`, `remove`: a dictionary from key to slot number, and one array of slots forming a doubly
/// linked list (no per-node objects; relinking a slot touches two integers, never copies a key or a value, so the
/// hot path does no reference counting). Not thread-safe: the loop thread owns it.
///
/// `get(_:markAccess: true)` also remembers that the entry was read, for owners that record accesses elsewhere
/// (Ferry's disk tier keeps its own LRU order): `takeAccessed()` returns each marked key once.
///
/// ```swift
/// let lru = MemoryLRU<String, [UInt8]>(budget: 1000)
/// let evicted = lru.set("a", [1, 2, 3], cost: 100)
/// lru.get("a")          // moves "a" to the front
/// ```
public final class MemoryLRU<Key: Hashable, Value> {
    public let budget: Int
    public private(set) var usedBytes = 0
    /// One slot per entry, its fields together: a `get` touches one array (one exclusivity check, one uniqueness
    /// check, through `withSlots`), not six.
    private struct Slot {
        var key: Key?
        var value: Value?
        var cost = 0
        var prev = -1
        var next = -1
        var marked = false
    }
    private var slots: [Slot] = []
    /// Slots marked since the last `takeAccessed` (a slot may appear again after being freed and reused).
    private var markedSlots: [Int] = []
    private var free: [Int] = []
    private var index: [Key: Int] = [:]
    private var head = -1  // most recently used
    private var tail = -1  // least recently used

    public init(budget: Int) {
        precondition(budget >= 0)
        self.budget = budget
    }

    public var count: Int { index.count }

    /// The value, marked most recently used (and, with `markAccess`, remembered for `takeAccessed`).
    public func get(_ key: Key, markAccess: Bool = false) -> Value? {
        guard let i = index[key] else { return nil }
        var newlyMarked = false
        let value = withSlots { s -> Value? in
            moveToFront(i, in: s)
            if markAccess && !s[i].marked {
                s[i].marked = true
                newlyMarked = true
            }
            return s[i].value
        }
        if newlyMarked { markedSlots.append(i) }
        return value
    }

    /// The value without touching recency.
    public func peek(_ key: Key) -> Value? {
        guard let i = index[key] else { return nil }
        return slots[i].value
    }

    public func contains(_ key: Key) -> Bool { index[key] != nil }

    /// Keys read with `markAccess` since the last call, each once, if still present.
    public func takeAccessed() -> [Key] {
        var out: [Key] = []
        out.reserveCapacity(markedSlots.count)
        for i in markedSlots where slots[i].marked {
            slots[i].marked = false
            if let key = slots[i].key { out.append(key) }
        }
        markedSlots.removeAll(keepingCapacity: markedSlots.count < 1 << 16)
        return out
    }

    /// Inserts or replaces; evicts least recently used entries until the budget holds and returns them. An entry
    /// costlier than the whole budget is not stored (and any old value of the key is removed): returned as evicted.
    @discardableResult
    public func set(_ key: Key, _ value: Value, cost: Int) -> [(key: Key, value: Value)] {
        precondition(cost >= 0)
        var evicted: [(key: Key, value: Value)] = []
        // Replacing a present key in place costs one lookup (a remove and an insert would cost three).
        if cost <= budget, let i = index[key] {
            usedBytes += cost - slots[i].cost
            withSlots { s in
                s[i].value = value
                s[i].cost = cost
                moveToFront(i, in: s)
            }
            while usedBytes > budget, tail >= 0, tail != i {
                let victim = slots[tail].key!
                if let v = remove(victim) { evicted.append((victim, v)) }
            }
            return evicted
        }
        remove(key)
        if cost > budget {
            evicted.append((key, value))
            return evicted
        }
        while usedBytes + cost > budget, tail >= 0 {
            let victim = slots[tail].key!
            if let v = remove(victim) { evicted.append((victim, v)) }
        }
        let i: Int
        if let f = free.popLast() {
            i = f
            slots[i] = Slot(key: key, value: value, cost: cost)
        } else {
            i = slots.count
            slots.append(Slot(key: key, value: value, cost: cost))
        }
        withSlots { s in
            s[i].next = head
            if head >= 0 { s[head].prev = i }
        }
        head = i
        if tail < 0 { tail = i }
        index[key] = i
        usedBytes += cost
        return evicted
    }

    /// Replaces the value of an existing entry in place, keeping its recency and cost.
    public func update(_ key: Key, _ body: (inout Value) -> Void) {
        guard let i = index[key] else { return }
        body(&slots[i].value!)
    }

    @discardableResult
    public func remove(_ key: Key) -> Value? {
        guard let i = index.removeValue(forKey: key) else { return nil }
        let slot = withSlots { s -> Slot in
            unlink(i, in: s)
            let slot = s[i]
            s[i] = Slot()
            return slot
        }
        usedBytes -= slot.cost
        free.append(i)
        return slot.value
    }

    /// Removes and returns the least recently used entry (for owners with limits of their own, e.g. an entry count).
    @discardableResult
    public func removeLeastRecent() -> (key: Key, value: Value)? {
        guard tail >= 0, let key = slots[tail].key, let value = remove(key) else { return nil }
        return (key, value)
    }

    /// Keys from least to most recently used (for tests and sweeps).
    public var keysLeastRecentFirst: [Key] {
        var out: [Key] = []
        var i = tail
        while i >= 0 {
            out.append(slots[i].key!)
            i = slots[i].prev
        }
        return out
    }

    /// Removes every entry `shouldRemove` accepts, visiting at most `limit` entries from the least recent end.
    public func removeAll(visiting limit: Int, where shouldRemove: (Key, Value) -> Bool) -> [(key: Key, value: Value)] {
        var removed: [(key: Key, value: Value)] = []
        var i = tail
        var visited = 0
        while i >= 0 && visited < limit {
            let before = slots[i].prev
            let key = slots[i].key!
            if shouldRemove(key, slots[i].value!), let value = remove(key) {
                removed.append((key, value))
            }
            i = before
            visited += 1
        }
        return removed
    }

    /// The slots as one buffer, for relinking without a check per field.
    private func withSlots<R>(_ body: (UnsafeMutableBufferPointer<Slot>) -> R) -> R {
        slots.withUnsafeMutableBufferPointer { body($0) }
    }

    private func unlink(_ i: Int, in s: UnsafeMutableBufferPointer<Slot>) {
        let p = s[i].prev, n = s[i].next
        if p >= 0 { s[p].next = n } else { head = n }
        if n >= 0 { s[n].prev = p } else { tail = p }
        s[i].prev = -1
        s[i].next = -1
    }

    private func moveToFront(_ i: Int, in s: UnsafeMutableBufferPointer<Slot>) {
        guard head != i else { return }
        unlink(i, in: s)
        s[i].next = head
        if head >= 0 { s[head].prev = i }
        head = i
        if tail < 0 { tail = i }
    }
}
