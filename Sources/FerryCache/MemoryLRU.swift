/// A least-recently-used map with an exact byte budget: every entry costs `cost` bytes as its owner declares it
/// (value bytes + key bytes + a fixed overhead for Ferry's cache), and the total never exceeds the budget.
///
/// Recency is kept the CLOCK way (second chance), as operating systems keep pages: a `get` only sets the entry's
/// referenced bit; eviction takes entries from the old end of the list, and one whose bit is set gets it cleared
/// and goes back to the new end instead of out. A `get` so touches its own slot only, where moving it to the
/// front of a linked list touched its two neighbours too — two more cache misses on every memory hit, the costliest
/// part of one (BENCHMARKS.md, issue 12). The order differs from exact LRU only among entries used since they last
/// reached the old end.
///
/// O(1) `get`, `set`, `remove` (eviction amortised): a hash index to slot numbers (`SlotIndex`), and one array
/// of slots forming a doubly linked list (no per-node objects). Not thread-safe: the loop thread owns it.
///
/// An owner may mark an entry dirty (`markDirty`, in MemoryLRU+Dirty.swift): a value written ahead to a log and not
/// yet handed to slower storage. The map then tells it when such a value leaves (`dirtyLeft`) and gives it the dirty
/// ones on request (`takeDirty`), so a key rewritten many times is handed on once.
///
/// `get(_:markAccess: true)` also remembers that the entry was read, for owners that record accesses elsewhere
/// (Ferry's disk tier keeps its own LRU order): `takeAccessed()` returns each marked key once.
///
/// ```swift
/// let lru = MemoryLRU<String, [UInt8]>(budget: 1000)
/// let evicted = lru.set("a", [1, 2, 3], cost: 100)
/// lru.get("a")          // "a" gets a second chance at the next eviction
/// ```
public final class MemoryLRU<Key: Hashable, Value> {
    public private(set) var budget: Int
    public private(set) var usedBytes = 0
    /// Where the last `set` put its key (`SlotHint.none` when it kept none): a hint for `markDirty(_:seq:at:holding:)`.
    public private(set) var lastSet = SlotHint.none
    /// The last stamp given to a slot (`SlotHint`).
    private var stamps: UInt32 = 0
    /// One slot per entry, its fields together: a `get` touches one array (one exclusivity check, one uniqueness
    /// check, through `withSlots`), not six. In the order a `get` reads them (a struct keeps its fields in the order
    /// declared): the image, the value and the referenced bit lie in the slot's first 80 bytes, two cache lines at
    /// most, where with the key between them a hit touched three.
    struct Slot {
        /// The key's image (`KeyImage`), first: a probe reads it and the value, and compares the key only when
        /// neither has one.
        var image: KeyImage
        var value: Value?
        var marked = false
        /// Used since it last reached the old end (CLOCK's referenced bit).
        var referenced = false
        /// Given when the key moved in (`SlotHint`). Here, in the room the two flags leave before `key` (a slot
        /// stays 144 bytes), and 32 bits: a hint is used within the loop iteration that made it, far fewer than
        /// 2³² insertions.
        var stamp: UInt32 = 0
        /// Left in place when the slot is freed (until it is reused, or the map empties): a key that is never nil
        /// is compared where it lies, where an optional one was copied — and retained — at every probe.
        var key: Key
        var cost = 0
        var prev = -1
        var next = -1
        /// Nonzero: the value is dirty, with this sequence number (`markDirty`).
        var dirty: UInt64 = 0
    }
    var slots: [Slot] = []
    /// Dirty marks in the order made (see `DirtyOrder`).
    var dirtyOrder = DirtyOrder()
    /// Called when a dirty value leaves the map: removed, evicted, or replaced by `set` (its mark goes with it), with
    /// its key, value and mark, and whether a `set` of its key replaced it in place (`replaced`; a `set` too large
    /// to keep removes the old value instead).
    public var dirtyLeft: ((_ key: Key, _ value: Value, _ mark: UInt64, _ replaced: Bool) -> Void)?
    /// Slots marked since the last `takeAccessed` (a slot may appear again after being freed and reused).
    private var markedSlots: [Int] = []
    private var free: [Int] = []
    /// Key hash → slot (`SlotIndex`: probes compare hashes, and only a matching one compares keys).
    var index = SlotIndex()
    private var head = -1  // most recently used
    private var tail = -1  // least recently used

    /// A key's image (`CacheKey.image`); nil: keys have none, and are compared with `==`.
    private let makeImage: ((Key) -> KeyImage)?
    /// A key's hash for the index (`CacheKey.digest`, made once with the key); nil: its `hashValue`.
    private let makeHash: ((Key) -> Int)?
    /// The platform's prefetch hint (`MemoryLRU+Prefetch`); nil: the prefetch calls do nothing. A C function: no
    /// context to retain and no thunk, where a Swift closure cost both on every call (callgrind).
    let prefetch: Prefetch?
    public typealias Prefetch = @convention(c) (UnsafeRawPointer?) -> Void

    /// `imageOf`: the image of a key (`KeyImage`: its bytes by value, so a probe compares them where the slot
    /// holds them); the default keeps none, and keys are compared with `==`. `hashOf`: the hash the index files a
    /// key under (equal keys, equal hashes), when the key carries one made already; the default is `hashValue`.
    /// `prefetch`: asks the CPU for the cache line at an address without waiting (`prefetchBucket`, `prefetchSlot`).
    public init(budget: Int, imageOf: ((Key) -> KeyImage)? = nil, hashOf: ((Key) -> Int)? = nil,
                prefetch: Prefetch? = nil) {
        precondition(budget >= 0)
        self.budget = budget
        self.makeImage = imageOf
        self.makeHash = hashOf
        self.prefetch = prefetch
    }

    @inline(__always)
    private func imageOf(_ key: Key) -> KeyImage { makeImage?(key) ?? .none }

    @inline(__always)
    func hashOf(_ key: Key) -> Int { makeHash?(key) ?? key.hashValue }

    public var count: Int { index.count }

    /// The slot holding `key` (its image, when it has one, is what is compared).
    @inline(__always)
    func slot(of key: Key, hash: Int, image: KeyImage? = nil) -> Int? {
        let image = image ?? imageOf(key)
        return index.find(hash: hash) { i in
            withSlots { KeyImage.decide(stored: $0[i].image, probe: image) ?? ($0[i].key == key) }
        }
    }

    /// The value, marked most recently used (and, with `markAccess`, remembered for `takeAccessed`).
    public func get(_ key: Key, markAccess: Bool = false) -> Value? {
        get(hash: hashOf(key), image: imageOf(key), markAccess: markAccess) { $0 == key }
    }

    /// `get` of the key whose hash (`hashOf`) is `hash`, whose image is `image` (ignored without `imageOf`) and which
    /// `matches` accepts (asked only when neither the probe nor a stored key has an image): a lookup by something
    /// that is not a `Key` but stands for one (`CacheKeyProbe`: a key's bytes where a request holds them).
    ///
    /// ```swift
    /// lru.get(hash: probe.digest, image: probe.image, where: probe.matches)   // as lru.get(probe.cacheKey)
    /// ```
    public func get(hash: Int, image: KeyImage, markAccess: Bool = false,
                    where matches: (borrowing Key) -> Bool) -> Value? {
        let image = makeImage == nil ? .none : image
        // The slots reached in place (`withSlots`): a read of the array retained and released it.
        let found = index.find(hash: hash) { i in
            withSlots { KeyImage.decide(stored: $0[i].image, probe: image) ?? matches($0[i].key) }
        }
        guard let i = found else { return nil }
        var newlyMarked = false
        let value = withSlots { s -> Value? in
            s[i].referenced = true
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
        guard let i = slot(of: key, hash: hashOf(key)) else { return nil }
        return slots[i].value
    }

    public func contains(_ key: Key) -> Bool { slot(of: key, hash: hashOf(key)) != nil }

    /// Keys read with `markAccess` since the last call, each once, if still present.
    public func takeAccessed() -> [Key] {
        var out: [Key] = []
        out.reserveCapacity(markedSlots.count)
        for i in markedSlots where slots[i].marked {
            slots[i].marked = false
            out.append(slots[i].key)
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
        // The key's hash and image made once (a new key's slot keeps the image).
        let hash = hashOf(key), image = imageOf(key)
        if cost <= budget, let i = slot(of: key, hash: hash, image: image) {
            usedBytes += cost - slots[i].cost
            let displaced = withSlots { s -> (Value, UInt64)? in
                let old = s[i].dirty == 0 ? nil : (s[i].value.unsafelyUnwrapped, s[i].dirty)
                s[i].value = value
                s[i].cost = cost
                s[i].referenced = true
                s[i].dirty = 0
                return old
            }
            if let displaced { dirtyLeft?(key, displaced.0, displaced.1, true) }
            while usedBytes > budget, let victim = evictOne(sparing: i) { evicted.append(victim) }
            lastSet = SlotHint(slot: i, stamp: slots[i].stamp)
            return evicted
        }
        remove(key)
        lastSet = .none
        if cost > budget {
            evicted.append((key, value))
            return evicted
        }
        while usedBytes + cost > budget, let victim = evictOne(sparing: nil) { evicted.append(victim) }
        let i: Int
        stamps &+= 1
        if let f = free.popLast() {
            i = f
            slots[i] = Slot(image: image, value: value, stamp: stamps, key: key, cost: cost)
        } else {
            i = slots.count
            slots.append(Slot(image: image, value: value, stamp: stamps, key: key, cost: cost))
        }
        withSlots { s in
            s[i].next = head
            if head >= 0 { s[head].prev = i }
        }
        head = i
        if tail < 0 { tail = i }
        index.insert(hash: hash, slot: i)
        usedBytes += cost
        lastSet = SlotHint(slot: i, stamp: stamps)
        return evicted
    }

    /// Replaces the value of an existing entry in place, keeping its recency and cost.
    public func update(_ key: Key, _ body: (inout Value) -> Void) {
        guard let i = slot(of: key, hash: hashOf(key)) else { return }
        body(&slots[i].value!)
    }

    @discardableResult
    public func remove(_ key: Key) -> Value? {
        let hash = hashOf(key)
        guard let i = slot(of: key, hash: hash) else { return nil }
        index.remove(hash: hash) { $0 == i }
        let slot = withSlots { s -> Slot in
            unlink(i, in: s)
            let slot = s[i]
            s[i].value = nil
            (s[i].cost, s[i].marked, s[i].referenced, s[i].dirty) = (0, false, false, 0)
            return slot
        }
        usedBytes -= slot.cost
        free.append(i)
        if index.count == 0 {
            // Empty: the freed slots' keys go too.
            slots.removeAll()
            free.removeAll()
            markedSlots.removeAll()
            dirtyOrder.removeAll()
        }
        if slot.dirty != 0, let value = slot.value { dirtyLeft?(key, value, slot.dirty, false) }
        return slot.value
    }

    /// Removes and returns the least recently used entry (for owners with limits of their own, e.g. an entry count).
    @discardableResult
    public func removeLeastRecent() -> (key: Key, value: Value)? { evictOne(sparing: nil) }

    /// A new budget (a reload): a smaller one evicts least recently used entries until it holds; returns them.
    ///
    /// ```swift
    /// lru.resize(budget: 500).count   // entries that no longer fit
    /// ```
    public func resize(budget newBudget: Int) -> [(key: Key, value: Value)] {
        precondition(newBudget >= 0)
        budget = newBudget
        var evicted: [(key: Key, value: Value)] = []
        while usedBytes > budget, let victim = evictOne(sparing: nil) { evicted.append(victim) }
        return evicted
    }

    /// CLOCK's hand: the entry at the old end goes, unless it was used since it got there (it then goes back to
    /// the new end, its bit cleared) or it is `sparing`. Nil when nothing but `sparing` is left.
    private func evictOne(sparing: Int?) -> (key: Key, value: Value)? {
        var turns = 0
        while tail >= 0, turns <= index.count {
            let t = tail
            if t == sparing && head == t { return nil }
            let keep = withSlots { s -> Bool in
                guard s[t].referenced || t == sparing else { return false }
                s[t].referenced = false
                moveToFront(t, in: s)
                return true
            }
            turns += 1
            if keep { continue }
            let key = slots[t].key
            guard let value = remove(key) else { return nil }
            return (key, value)
        }
        return nil
    }

    /// Keys from least to most recently used (for tests and sweeps).
    public var keysLeastRecentFirst: [Key] {
        var out: [Key] = []
        var i = tail
        while i >= 0 {
            out.append(slots[i].key)
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
            let key = slots[i].key
            if shouldRemove(key, slots[i].value!), let value = remove(key) {
                removed.append((key, value))
            }
            i = before
            visited += 1
        }
        return removed
    }

    /// The slots as one buffer, for relinking without a check per field.
    func withSlots<R>(_ body: (UnsafeMutableBufferPointer<Slot>) -> R) -> R {
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
