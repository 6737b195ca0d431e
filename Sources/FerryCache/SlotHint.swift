/// Where a `MemoryLRU` put an entry: its slot, and the stamp the slot got when the entry's key moved in. A hint, not
/// a reference: the entry may have left since, and the slot been given to another key. `MemoryLRU` trusts it only
/// while the slot holds a live entry with the same stamp, which is then the same key: a slot's stamp changes every
/// time a key moves in (stamps come from one counter, which repeats only after 2³² insertions; a hint is used within
/// the loop iteration that made it), and stays while the key's value is replaced in place.
///
/// Why: Ferry's cache store marks a journaled set's value dirty at the end of the loop iteration in which it was set
/// (`MemoryLRU.markDirty`). Finding the key again hashed it, made its image and probed the index, and comparing the
/// key with the one in a remembered slot retained both Strings: ~300–400 instructions a set (callgrind), where two
/// integer compares do.
///
/// ```swift
/// let lru = MemoryLRU<String, Int>(budget: 100)
/// lru.set("a", 1, cost: 10)
/// let hint = lru.lastSet                        // slot 0, stamp 1
/// lru.markDirty("a", seq: 7, at: hint) { _ in true }   // found without a lookup
/// ```
public struct SlotHint: Sendable, Equatable {
    public let slot: Int
    public let stamp: UInt32

    /// No place: the lookup is made.
    public static let none = SlotHint(slot: -1, stamp: 0)

    init(slot: Int, stamp: UInt32) {
        self.slot = slot
        self.stamp = stamp
    }
}
