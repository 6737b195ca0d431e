/// A least-recently-used map with an exact byte budget: every entry costs `cost` bytes as its owner declares it
/// (value bytes + key bytes + a fixed overhead for Ferry's cache), and the total never exceeds the budget.
///
/// O(1) `get`, `set`, `remove`: a dictionary of slots in an array-backed doubly linked list (no per-node objects,
/// so no reference counting on the hot path). Not thread-safe: the loop thread owns it.
///
/// ```swift
/// let lru = MemoryLRU<String, [UInt8]>(budget: 1000)
/// let evicted = lru.set("a", [1, 2, 3], cost: 100)
/// lru.get("a")          // moves "a" to the front
/// ```
public final class MemoryLRU<Key: Hashable, Value> {
    private struct Slot {
        var key: Key
        var value: Value
        var cost: Int
        var prev: Int
        var next: Int
    }

    public let budget: Int
    public private(set) var usedBytes = 0
    private var slots: [Slot?] = []
    private var free: [Int] = []
    private var index: [Key: Int] = [:]
    private var head = -1  // most recently used
    private var tail = -1  // least recently used

    public init(budget: Int) {
        precondition(budget >= 0)
        self.budget = budget
    }

    public var count: Int { index.count }

    /// The value, marked most recently used.
    public func get(_ key: Key) -> Value? {
        guard let i = index[key] else { return nil }
        moveToFront(i)
        return slots[i]!.value
    }

    /// The value without touching recency.
    public func peek(_ key: Key) -> Value? {
        guard let i = index[key] else { return nil }
        return slots[i]!.value
    }

    public func contains(_ key: Key) -> Bool { index[key] != nil }

    /// Inserts or replaces; evicts least recently used entries until the budget holds and returns them. An entry
    /// costlier than the whole budget is not stored (and any old value of the key is removed): returned as evicted.
    @discardableResult
    public func set(_ key: Key, _ value: Value, cost: Int) -> [(key: Key, value: Value)] {
        precondition(cost >= 0)
        var evicted: [(key: Key, value: Value)] = []
        if let old = remove(key) { _ = old }
        if cost > budget {
            evicted.append((key, value))
            return evicted
        }
        while usedBytes + cost > budget, tail >= 0 {
            let victim = slots[tail]!
            _ = remove(victim.key)
            evicted.append((victim.key, victim.value))
        }
        let slot = Slot(key: key, value: value, cost: cost, prev: -1, next: head)
        let i: Int
        if let f = free.popLast() {
            slots[f] = slot
            i = f
        } else {
            slots.append(slot)
            i = slots.count - 1
        }
        if head >= 0 { slots[head]!.prev = i }
        head = i
        if tail < 0 { tail = i }
        index[key] = i
        usedBytes += cost
        return evicted
    }

    /// Replaces the value of an existing entry in place, keeping its recency and cost.
    public func update(_ key: Key, _ body: (inout Value) -> Void) {
        guard let i = index[key] else { return }
        body(&slots[i]!.value)
    }

    @discardableResult
    public func remove(_ key: Key) -> Value? {
        guard let i = index.removeValue(forKey: key) else { return nil }
        let slot = slots[i]!
        unlink(i)
        slots[i] = nil
        free.append(i)
        usedBytes -= slot.cost
        return slot.value
    }

    /// Keys from least to most recently used (for tests and sweeps).
    public var keysLeastRecentFirst: [Key] {
        var out: [Key] = []
        var i = tail
        while i >= 0 {
            out.append(slots[i]!.key)
            i = slots[i]!.prev
        }
        return out
    }

    /// Removes every entry `shouldRemove` accepts, visiting at most `limit` entries from the least recent end.
    public func removeAll(visiting limit: Int, where shouldRemove: (Key, Value) -> Bool) -> [(key: Key, value: Value)] {
        var removed: [(key: Key, value: Value)] = []
        var i = tail
        var visited = 0
        while i >= 0 && visited < limit {
            let slot = slots[i]!
            let prev = slot.prev
            if shouldRemove(slot.key, slot.value) {
                _ = remove(slot.key)
                removed.append((slot.key, slot.value))
            }
            i = prev
            visited += 1
        }
        return removed
    }

    private func unlink(_ i: Int) {
        let s = slots[i]!
        if s.prev >= 0 { slots[s.prev]!.next = s.next } else { head = s.next }
        if s.next >= 0 { slots[s.next]!.prev = s.prev } else { tail = s.prev }
    }

    private func moveToFront(_ i: Int) {
        guard head != i else { return }
        unlink(i)
        slots[i]!.prev = -1
        slots[i]!.next = head
        if head >= 0 { slots[head]!.prev = i }
        head = i
        if tail < 0 { tail = i }
    }
}
