/// Deadlines of requests in flight, earliest first: a binary min-heap driven by an injected clock, so one loop timer
/// serves every deadline and the logic is tested without a loop.
///
/// Entries are never removed early: a request that finishes leaves its entry behind, and whoever pops it checks that
/// the request is still the same one (ids can be reused). This keeps `schedule` at O(log n) with no lookup table.
///
/// ```swift
/// var q = DeadlineQueue<Int>()
/// q.schedule(7, at: 1_000)
/// q.popExpired(now: 1_000)   // [7]
/// ```
public struct DeadlineQueue<Key> {
    private var heap: [(at: UInt64, seq: UInt64, key: Key)] = []
    private var nextSeq: UInt64 = 0

    public init() {}

    public var count: Int { heap.count }
    public var isEmpty: Bool { heap.isEmpty }

    /// The earliest deadline, if any: when the loop timer should fire next.
    public var nextDeadline: UInt64? { heap.first?.at }

    public mutating func schedule(_ key: Key, at deadline: UInt64) {
        heap.append((deadline, nextSeq, key))
        nextSeq &+= 1
        siftUp(heap.count - 1)
    }

    /// Removes and returns every key whose deadline is at or before `now`, earliest first (ties in schedule order).
    public mutating func popExpired(now: UInt64) -> [Key] {
        var out: [Key] = []
        while let top = heap.first, top.at <= now {
            out.append(top.key)
            let last = heap.removeLast()
            if !heap.isEmpty {
                heap[0] = last
                siftDown(0)
            }
        }
        return out
    }

    /// Keeps only the entries `keep` accepts, in O(n).
    public mutating func compact(keep: (Key) -> Bool) {
        heap.removeAll { !keep($0.key) }
        var i = heap.count / 2 - 1
        while i >= 0 {
            siftDown(i)
            i -= 1
        }
    }

    private func less(_ a: Int, _ b: Int) -> Bool {
        heap[a].at != heap[b].at ? heap[a].at < heap[b].at : heap[a].seq < heap[b].seq
    }

    private mutating func siftUp(_ index: Int) {
        var c = index
        while c > 0 {
            let p = (c - 1) / 2
            guard less(c, p) else { return }
            heap.swapAt(c, p)
            c = p
        }
    }

    private mutating func siftDown(_ index: Int) {
        var p = index
        while true {
            let l = 2 * p + 1, r = l + 1
            var m = p
            if l < heap.count && less(l, m) { m = l }
            if r < heap.count && less(r, m) { m = r }
            if m == p { return }
            heap.swapAt(p, m)
            p = m
        }
    }
}
