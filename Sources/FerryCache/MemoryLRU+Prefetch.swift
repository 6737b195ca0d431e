/// Prefetching for a batch of lookups: the index buckets, then the slots, of keys about to be looked up, asked for
/// before the first of them is, so that their cache misses overlap instead of following one another.
///
/// Why: at 10,000 keys a lookup's bucket and slot are rarely still cached when it comes (each request between two
/// reads of a key runs the kernel's socket code over other memory), and a memory hit waited on two or three misses in
/// a row, ~40 % of the daemon's user time at 50 connections (perf), where a loop iteration has ~50 requests in
/// hand whose keys are known before any is answered (`ReadBatch`). Hints only: a wrong guess costs a wasted line,
/// never a wrong answer, and without `prefetch` (the platform's, given at `init`: this module imports no C) these do
/// nothing.
///
/// ```swift
/// let lru = MemoryLRU<CacheKey, CacheEntry>(budget: 1 << 20, hashOf: { $0.digest }, prefetch: { ferry_prefetch($0) })
/// // (a closure that captures nothing: it is a C function pointer, `Prefetch`)
/// for d in digests { lru.prefetchBucket(hash: d) }   // as requests arrive
/// for d in digests { lru.prefetchSlot(hash: d) }     // later: the buckets are in; now the slots
/// ```
extension MemoryLRU {
    /// Asks for the line of `hash`'s home bucket in the index.
    public func prefetchBucket(hash: Int) {
        guard let prefetch else { return }
        index.withHomeBucket(hash: hash) { prefetch($0) }
    }

    /// Calls `body` with the address of the value field of the slot first filed under `hash` (its slot read now:
    /// best after `prefetchSlot`), for the owner, who knows what its values hold, to prefetch what they point to
    /// (`CacheStore.prefetchValue`). An address, not the value: a value handed over, even borrowed, was retained
    /// and released (callgrind).
    public func withFirstValueField(hash: Int, _ body: (UnsafeRawPointer) -> Void) {
        guard prefetch != nil, let i = index.firstSlot(hash: hash) else { return }
        withSlots { s in withUnsafeMutablePointer(to: &s[i].value) { body(UnsafeRawPointer($0)) } }
    }

    /// Asks for the slot first filed under `hash` (its bucket read now: best after `prefetchBucket` has brought it
    /// in): the lines of its image, value and referenced bit, which a hit reads first.
    public func prefetchSlot(hash: Int) {
        guard let prefetch, let i = index.firstSlot(hash: hash) else { return }
        withSlots { s in
            let start = UnsafeRawPointer(s.baseAddress! + i)
            prefetch(start)
            // A slot is longer than a line, and its start anywhere in one: its first 80 bytes may reach the next.
            prefetch(start + 64)
        }
    }
}
