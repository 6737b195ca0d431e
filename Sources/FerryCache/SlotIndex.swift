/// An open-addressing hash index from a key's hash to a slot number, for `MemoryLRU`: linear probing over one
/// array of buckets that hold the hash's low 32 bits beside the slot, so a probe compares integers and only a
/// bucket whose bits match asks the caller to compare keys (`matches`). A `Dictionary<Key, Int>` compares — and so
/// copies and retains — the stored key at every probe, and that was most of a memory hit's cost. Deletion shifts
/// the following buckets back (no tombstones), and the table doubles past 70 % full.
///
/// Why 8-byte buckets and 70 %: a memory hit's first cache miss is its bucket, and at 10,000 keys the table was
/// half a megabyte (16-byte buckets, doubled at half full); it is now an eighth of a megabyte, eight buckets to a
/// cache line, so the longer runs of a fuller table still end in the line the probe started in.
///
/// ```swift
/// var index = SlotIndex()
/// index.insert(hash: h, slot: 3)
/// index.find(hash: h) { slot in keys[slot] == key }   // 3
/// index.remove(hash: h) { slot in slot == 3 }
/// ```
struct SlotIndex {
    private struct Bucket {
        /// The hash's low 32 bits (its home bucket is `tag & mask`: the table never has 2^32 buckets).
        var tag: UInt32
        /// The slot, or -1 for an empty bucket.
        var slot: Int32
    }

    private var buckets: [Bucket] = Array(repeating: Bucket(tag: 0, slot: -1), count: 16)
    private var mask = 15
    private(set) var count = 0

    /// The slot whose bucket holds `hash` and for which `matches` is true.
    @inline(__always)
    func find(hash: Int, matches: (Int) -> Bool) -> Int? {
        let tag = UInt32(truncatingIfNeeded: hash)
        return buckets.withUnsafeBufferPointer { b in
            var i = Int(tag) & mask
            while true {
                let bucket = b[i]
                if bucket.slot < 0 { return nil }
                if bucket.tag == tag && matches(Int(bucket.slot)) { return Int(bucket.slot) }
                i = (i + 1) & mask
            }
        }
    }

    /// The address of `hash`'s home bucket, for `body` to prefetch (valid only during the call). `mutating`
    /// though it changes nothing: the buckets are reached in place, where a read of them retained and released
    /// them (a prefetch hint should cost next to nothing).
    mutating func withHomeBucket<R>(hash: Int, _ body: (UnsafeRawPointer) -> R) -> R {
        let home = Int(UInt32(truncatingIfNeeded: hash)) & mask
        return buckets.withUnsafeMutableBufferPointer { b in body(UnsafeRawPointer(b.baseAddress! + home)) }
    }

    /// The first slot filed under `hash`'s 32 bits, without asking whose key it is: a guess, good for a prefetch.
    /// (`mutating` as `withHomeBucket`.)
    mutating func firstSlot(hash: Int) -> Int? {
        let tag = UInt32(truncatingIfNeeded: hash), m = mask
        return buckets.withUnsafeMutableBufferPointer { b -> Int? in
            var i = Int(tag) & m
            while b[i].slot >= 0 {
                if b[i].tag == tag { return Int(b[i].slot) }
                i = (i + 1) & m
            }
            return nil
        }
    }

    /// Adds a slot that is not in the index yet.
    mutating func insert(hash: Int, slot: Int) {
        if (count + 1) * 10 > buckets.count * 7 { grow() }
        place(tag: UInt32(truncatingIfNeeded: hash), slot: Int32(slot))
        count += 1
    }

    /// Removes the bucket holding `hash` for which `matches` is true; false when there is none.
    @discardableResult
    mutating func remove(hash: Int, matches: (Int) -> Bool) -> Bool {
        let m = mask, tag = UInt32(truncatingIfNeeded: hash)
        return buckets.withUnsafeMutableBufferPointer { b -> Bool in
            var i = Int(tag) & m
            while true {
                if b[i].slot < 0 { return false }
                if b[i].tag == tag && matches(Int(b[i].slot)) { break }
                i = (i + 1) & m
            }
            // Backward shift: each following bucket of the run moves into the hole if its home is not between
            // the hole and itself (cyclically), so every remaining key stays reachable from its home.
            var hole = i
            var j = i
            while true {
                j = (j + 1) & m
                if b[j].slot < 0 { break }
                let home = Int(b[j].tag) & m
                let stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j)
                if !stays {
                    b[hole] = b[j]
                    hole = j
                }
            }
            b[hole].slot = -1
            count -= 1
            return true
        }
    }

    private mutating func place(tag: UInt32, slot: Int32) {
        let m = mask
        buckets.withUnsafeMutableBufferPointer { b in
            var i = Int(tag) & m
            while b[i].slot >= 0 { i = (i + 1) & m }
            b[i] = Bucket(tag: tag, slot: slot)
        }
    }

    private mutating func grow() {
        let old = buckets
        buckets = Array(repeating: Bucket(tag: 0, slot: -1), count: old.count * 2)
        mask = buckets.count - 1
        for bucket in old where bucket.slot >= 0 { place(tag: bucket.tag, slot: bucket.slot) }
    }
}
