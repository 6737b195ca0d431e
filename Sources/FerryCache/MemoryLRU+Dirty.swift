/// Dirty values: entries whose value an owner wrote ahead to a log and has not handed to slower storage yet, each
/// marked with the log's sequence number. Ferry's cache store marks the small sets its journal wrote, so the disk
/// worker is handed a key's newest value once per apply (`takeDirty`) instead of every record of it; a dirty value
/// that leaves the map is handed over then (`dirtyLeft`).
///
/// ```swift
/// let lru = MemoryLRU<String, Int>(budget: 100)
/// lru.set("a", 1, cost: 10)
/// lru.markDirty("a", seq: 7) { $0 == 1 }   // .marked: "a" still holds the value the record was written for
/// lru.oldestDirtySeq                       // 7
/// lru.takeDirty()                          // [("a", 1, 7)], and "a" is clean again
/// ```
extension MemoryLRU {
    /// What `markDirty` did.
    public enum DirtyMarking: Equatable {
        /// The key is absent, or holds another value than the record's: nothing marked.
        case notHeld
        /// Marked; the value was clean.
        case marked
        /// Marked; the value was already dirty with the mark `previous` (a record of the same value written twice,
        /// which this one now stands for).
        case remarked(previous: UInt64)
    }

    /// Marks `key`'s value dirty with `seq` when `holding` accepts the value the map holds for it (the value the
    /// logged record carries, not a newer one). Marks come in increasing `seq` (the log's order).
    ///
    /// `at`: where `key` was put (`lastSet` after its `set`): used when the slot still holds that key's entry (its
    /// stamp unchanged), else the key is looked up (`SlotHint`).
    @discardableResult
    public func markDirty(_ key: Key, seq: UInt64, at hint: SlotHint = .none, holding: (Value) -> Bool) -> DirtyMarking {
        precondition(seq > 0)
        let h = hint.slot
        let hinted = h >= 0 && h < slots.count && withSlots { $0[h].stamp == hint.stamp && $0[h].value != nil }
        guard let i = hinted ? h : slot(of: key, hash: hashOf(key)) else { return .notHeld }
        let marking = withSlots { s -> DirtyMarking in
            guard holding(s[i].value.unsafelyUnwrapped) else { return .notHeld }
            let previous = s[i].dirty
            s[i].dirty = seq
            return previous == 0 ? .marked : .remarked(previous: previous)
        }
        guard marking != .notHeld else { return marking }
        dirtyOrder.append(slot: i, seq: seq)
        if dirtyOrder.needsCompacting {
            withSlots { s in dirtyOrder.compact { slot, seq in slot < s.count && s[slot].dirty == seq } }
        }
        return marking
    }

    /// Every dirty value with its mark, oldest mark first, each now clean.
    public func takeDirty() -> [(key: Key, value: Value, seq: UInt64)] {
        var out: [(key: Key, value: Value, seq: UInt64)] = []
        out.reserveCapacity(dirtyOrder.count)
        withSlots { s in
            dirtyOrder.drain { slot, seq in
                guard s[slot].dirty == seq else { return }
                s[slot].dirty = 0
                out.append((s[slot].key, s[slot].value.unsafelyUnwrapped, seq))
            }
        }
        return out
    }

    /// The lowest mark of a value still dirty, or nil when none is: everything logged below it is clean (handed on,
    /// or replaced by a newer value).
    public var oldestDirtySeq: UInt64? {
        withSlots { s in dirtyOrder.oldest { slot, seq in slot < s.count && s[slot].dirty == seq } }
    }
}

/// The order in which values were marked dirty, as (slot, mark) pairs: a mark is live while its slot still carries
/// it (a slot cleaned, freed or marked again leaves its old pair behind, skipped when met). Marks are appended in
/// increasing order, so the first live pair holds the lowest live mark: found by dropping dead pairs from the front,
/// each once. A key rewritten between two drains leaves a dead pair per write: the pairs are compacted once they are
/// more than twice the live ones of the last compaction (and 4,096 more), so they stay within a small multiple of
/// the dirty values.
struct DirtyOrder {
    private var pairs: [(slot: Int, seq: UInt64)] = []
    private var start = 0
    private var compactAt = 4096

    var count: Int { pairs.count - start }

    mutating func append(slot: Int, seq: UInt64) {
        pairs.append((slot, seq))
    }

    var needsCompacting: Bool { count >= compactAt }

    /// Keeps the live pairs only, in order.
    mutating func compact(isLive: (Int, UInt64) -> Bool) {
        var live: [(slot: Int, seq: UInt64)] = []
        live.reserveCapacity(count / 2)
        for k in start..<pairs.count where isLive(pairs[k].slot, pairs[k].seq) { live.append(pairs[k]) }
        pairs = live
        start = 0
        compactAt = 2 * live.count + 4096
    }

    /// The first live mark, dead ones before it dropped.
    mutating func oldest(isLive: (Int, UInt64) -> Bool) -> UInt64? {
        while start < pairs.count {
            let pair = pairs[start]
            if isLive(pair.slot, pair.seq) { return pair.seq }
            start += 1
        }
        removeAll()
        return nil
    }

    /// Visits every pair in order and forgets them all.
    mutating func drain(_ visit: (Int, UInt64) -> Void) {
        for k in start..<pairs.count { visit(pairs[k].slot, pairs[k].seq) }
        removeAll()
    }

    mutating func removeAll() {
        pairs.removeAll(keepingCapacity: pairs.count <= 1 << 16)
        start = 0
        compactAt = 4096
    }
}
