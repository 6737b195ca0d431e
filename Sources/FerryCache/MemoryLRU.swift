/// A least-recently-used map with an exact byte budget: every entry costs `cost` bytes as its owner declares it
/// (value bytes + key bytes + a fixed overhead for Ferry's cache), and the total never exceeds the budget.
///
/// O(1) `get`, `set`, `remove`: a dictionary from key to slot number, and the slots' fields in parallel arrays
/// forming a doubly linked list (no per-node objects; relinking a slot touches two integers, never copies a key or
/// a value, so the hot path does no reference counting). Not thread-safe: the loop thread owns it.
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
    private var keys: [Key?] = []
    private var values: [Value?] = []
    private var costs: [Int] = []
    private var prev: [Int] = []
    private var next: [Int] = []
    private var marked: [Bool] = []
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
        moveToFront(i)
        if markAccess && !marked[i] {
            marked[i] = true
            markedSlots.append(i)
        }
        return values[i]
    }

    /// The value without touching recency.
    public func peek(_ key: Key) -> Value? {
        guard let i = index[key] else { return nil }
        return values[i]
    }

    public func contains(_ key: Key) -> Bool { index[key] != nil }

    /// Keys read with `markAccess` since the last call, each once, if still present.
    public func takeAccessed() -> [Key] {
        var out: [Key] = []
        out.reserveCapacity(markedSlots.count)
        for i in markedSlots where marked[i] {
            marked[i] = false
            if let key = keys[i] { out.append(key) }
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
            usedBytes += cost - costs[i]
            values[i] = value
            costs[i] = cost
            moveToFront(i)
            while usedBytes > budget, tail >= 0, tail != i {
                let victim = keys[tail]!
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
            let victim = keys[tail]!
            if let v = remove(victim) { evicted.append((victim, v)) }
        }
        let i: Int
        if let f = free.popLast() {
            i = f
            keys[i] = key
            values[i] = value
            costs[i] = cost
            marked[i] = false
        } else {
            i = keys.count
            keys.append(key)
            values.append(value)
            costs.append(cost)
            prev.append(-1)
            next.append(-1)
            marked.append(false)
        }
        prev[i] = -1
        next[i] = head
        if head >= 0 { prev[head] = i }
        head = i
        if tail < 0 { tail = i }
        index[key] = i
        usedBytes += cost
        return evicted
    }

    /// Replaces the value of an existing entry in place, keeping its recency and cost.
    public func update(_ key: Key, _ body: (inout Value) -> Void) {
        guard let i = index[key] else { return }
        body(&values[i]!)
    }

    @discardableResult
    public func remove(_ key: Key) -> Value? {
        guard let i = index.removeValue(forKey: key) else { return nil }
        unlink(i)
        let value = values[i]
        keys[i] = nil
        values[i] = nil
        marked[i] = false
        usedBytes -= costs[i]
        free.append(i)
        return value
    }

    /// Removes and returns the least recently used entry (for owners with limits of their own, e.g. an entry count).
    @discardableResult
    public func removeLeastRecent() -> (key: Key, value: Value)? {
        guard tail >= 0, let key = keys[tail], let value = remove(key) else { return nil }
        return (key, value)
    }

    /// Keys from least to most recently used (for tests and sweeps).
    public var keysLeastRecentFirst: [Key] {
        var out: [Key] = []
        var i = tail
        while i >= 0 {
            out.append(keys[i]!)
            i = prev[i]
        }
        return out
    }

    /// Removes every entry `shouldRemove` accepts, visiting at most `limit` entries from the least recent end.
    public func removeAll(visiting limit: Int, where shouldRemove: (Key, Value) -> Bool) -> [(key: Key, value: Value)] {
        var removed: [(key: Key, value: Value)] = []
        var i = tail
        var visited = 0
        while i >= 0 && visited < limit {
            let before = prev[i]
            let key = keys[i]!
            if shouldRemove(key, values[i]!), let value = remove(key) {
                removed.append((key, value))
            }
            i = before
            visited += 1
        }
        return removed
    }

    private func unlink(_ i: Int) {
        let p = prev[i], n = next[i]
        if p >= 0 { next[p] = n } else { head = n }
        if n >= 0 { prev[n] = p } else { tail = p }
    }

    private func moveToFront(_ i: Int) {
        guard head != i else { return }
        unlink(i)
        prev[i] = -1
        next[i] = head
        if head >= 0 { prev[head] = i }
        head = i
        if tail < 0 { tail = i }
    }
}
