/// An open-addressing hash index from a key's hash to a slot number, for `MemoryLRU`: linear probing over one
/// array of buckets that hold the full hash beside the slot, so a probe compares integers and only a bucket whose
/// hash matches asks the caller to compare keys (`matches`). A `Dictionary<Key, Int>` compares — and so copies and
/// retains — the stored key at every probe, and that was most of a memory hit's cost. Deletion shifts the
/// following buckets back (no tombstones), and the table doubles past half full, so probes stay short.
///
/// ```swift
/// var index = SlotIndex()
/// index.insert(hash: h, slot: 3)
/// index.find(hash: h) { slot in keys[slot] == key }   // 3
/// index.remove(hash: h) { slot in slot == 3 }
/// ```
struct SlotIndex {
    private struct Bucket {
        var hash: Int
        /// The slot, or -1 for an empty bucket.
        var slot: Int32
    }

    private var buckets: [Bucket] = Array(repeating: Bucket(hash: 0, slot: -1), count: 16)
    private var mask = 15
    private(set) var count = 0

    /// The slot whose bucket holds `hash` and for which `matches` is true.
    @inline(__always)
    func find(hash: Int, matches: (Int) -> Bool) -> Int? {
        buckets.withUnsafeBufferPointer { b in
            var i = hash & mask
            while true {
                let bucket = b[i]
                if bucket.slot < 0 { return nil }
                if bucket.hash == hash && matches(Int(bucket.slot)) { return Int(bucket.slot) }
                i = (i + 1) & mask
            }
        }
    }

    /// Adds a slot that is not in the index yet.
    mutating func insert(hash: Int, slot: Int) {
        if (count + 1) * 2 > buckets.count { grow() }
        place(hash: hash, slot: Int32(slot))
        count += 1
    }

    /// Removes the bucket holding `hash` for which `matches` is true; false when there is none.
    @discardableResult
    mutating func remove(hash: Int, matches: (Int) -> Bool) -> Bool {
        let m = mask
        return buckets.withUnsafeMutableBufferPointer { b -> Bool in
            var i = hash & m
            while true {
                if b[i].slot < 0 { return false }
                if b[i].hash == hash && matches(Int(b[i].slot)) { break }
                i = (i + 1) & m
            }
            // Backward shift: each following bucket of the run moves into the hole if its home is not between
            // the hole and itself (cyclically), so every remaining key stays reachable from its home.
            var hole = i
            var j = i
            while true {
                j = (j + 1) & m
                if b[j].slot < 0 { break }
                let home = b[j].hash & m
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

    private mutating func place(hash: Int, slot: Int32) {
        let m = mask
        buckets.withUnsafeMutableBufferPointer { b in
            var i = hash & m
            while b[i].slot >= 0 { i = (i + 1) & m }
            b[i] = Bucket(hash: hash, slot: slot)
        }
    }

    private mutating func grow() {
        let old = buckets
        buckets = Array(repeating: Bucket(hash: 0, slot: -1), count: old.count * 2)
        mask = buckets.count - 1
        for bucket in old where bucket.slot >= 0 { place(hash: bucket.hash, slot: bucket.slot) }
    }
}
