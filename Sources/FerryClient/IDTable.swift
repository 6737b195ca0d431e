/// The waiters of a connection's calls by request id: a small open-addressing hash table (linear probing, deletion
/// by backward shift) for the one key type the client has — nonzero ids counted up from 1.
///
/// Why not `Dictionary<UInt64, …>`: it hashes every key with SipHash, seeded per process, and a call probes the
/// table three times (register, send check, reply); the hashing and probing were ~4 % of a pipelined call (perf).
/// Ids here are not chosen by anyone who could make them collide, so a multiplicative (Fibonacci) hash spreads them:
/// consecutive ids land in consecutive-ish slots far apart enough that probes stay short.
///
/// ```swift
/// var table = IDTable<String>()
/// table[7] = "seven"
/// table[7]                      // "seven"
/// table.removeValue(forKey: 7)  // "seven"; table[7] is nil now
/// ```
struct IDTable<Value> {
    /// 0: an empty slot (ids start at 1).
    private var keys: [UInt64]
    private var values: [Value?]
    private(set) var count = 0
    /// `64 - log2(capacity)`: the hash keeps the product's top bits.
    private var shift: UInt64

    init() {
        keys = Array(repeating: 0, count: 16)
        values = Array(repeating: nil, count: 16)
        shift = 64 - 4
    }

    var isEmpty: Bool { count == 0 }
    private var mask: Int { keys.count - 1 }

    private func home(_ id: UInt64) -> Int { Int(truncatingIfNeeded: (id &* 0x9E37_79B9_7F4A_7C15) >> shift) }

    /// The slot holding `id`, or the empty slot where it would go.
    private func slot(of id: UInt64) -> (index: Int, found: Bool) {
        var i = home(id)
        while true {
            let k = keys[i]
            if k == id { return (i, true) }
            if k == 0 { return (i, false) }
            i = (i + 1) & mask
        }
    }

    subscript(id: UInt64) -> Value? {
        get {
            let (i, found) = slot(of: id)
            return found ? values[i] : nil
        }
        set {
            precondition(id != 0, "request ids start at 1")
            guard let newValue else {
                removeValue(forKey: id)
                return
            }
            var (i, found) = slot(of: id)
            if !found {
                // At most half full, so that probes stay short and an empty slot always ends one.
                if (count + 1) * 2 > keys.count {
                    grow()
                    i = slot(of: id).index
                }
                keys[i] = id
                count += 1
            }
            values[i] = newValue
        }
    }

    /// Removes and returns the value of `id`. The entries after it in its run move back to close the gap, so that
    /// no tombstones pile up as ids come and go.
    @discardableResult
    mutating func removeValue(forKey id: UInt64) -> Value? {
        let (found, present) = slot(of: id)
        guard present else { return nil }
        let removed = values[found]
        var hole = found
        var i = (hole + 1) & mask
        while keys[i] != 0 {
            let h = home(keys[i])
            // The entry at i may fill the hole when its home is not in (hole, i] (cyclically).
            let stays = hole <= i ? (hole < h && h <= i) : (hole < h || h <= i)
            if !stays {
                keys[hole] = keys[i]
                values[hole] = values[i]
                hole = i
            }
            i = (i + 1) & mask
        }
        keys[hole] = 0
        values[hole] = nil
        count -= 1
        return removed
    }

    /// Every value, the table left empty.
    mutating func removeAll() -> [Value] {
        let all = values.compactMap { $0 }
        self = IDTable()
        return all
    }

    private mutating func grow() {
        let oldKeys = keys, oldValues = values
        keys = Array(repeating: 0, count: oldKeys.count * 2)
        values = Array(repeating: nil, count: oldKeys.count * 2)
        shift -= 1
        for (k, id) in oldKeys.enumerated() where id != 0 {
            let i = slot(of: id).index
            keys[i] = id
            values[i] = oldValues[k]
        }
    }
}
