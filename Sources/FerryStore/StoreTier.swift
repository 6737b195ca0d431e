import FerryCache

/// A tier of the storage engine below the memory tier: the disk today (`DiskTier`), a remote tier later, beside it.
/// It keeps entries longer than memory does and answers on the loop thread, through callbacks, in the order it was
/// asked. `CacheStore` puts the memory tier in front and keeps it consistent: what a tier answers late never
/// replaces something newer in memory. No operation sees a tier: they all go through `CacheStore`.
///
/// ```swift
/// let settling = tier.settlesAtOnce(key, entry, ifAbsent: false)
/// if settling { memory[key] = entry }                                   // readable now, settled this iteration
/// tier.write(key, entry, ifAbsent: false, now: now, settling: settling) { result in … }
/// tier.endOfIteration { flushReplies() }                                          // once per loop iteration
/// ```
public protocol StoreTier: AnyObject {
    /// What the tier holds and has dropped, as of its last report.
    var usage: TierUsage { get }

    /// The live entry for `key`, or nil.
    func read(_ key: CacheKey, now: Int64, _ done: @escaping (Result<CacheEntry?, StoreError>) -> Void)
    /// The same, but a value larger than `streamAbove` may come back as a pinned `StoredBlob`, not read.
    func readValue(_ key: CacheKey, now: Int64, streamAbove: Int?, _ done: @escaping (Result<StoredValue?, StoreError>) -> Void)
    /// A streamed blob turned out damaged: drop it if its row still points at it (the caller counts it).
    func reportDamaged(_ blob: StoredBlob)
    /// Whether a write of `entry` would be settled (acknowledged or failed) by the end of this loop iteration, so
    /// that it may be read from memory at once, as Redis serves a value before its append-only file is written.
    func settlesAtOnce(_ key: CacheKey, _ entry: CacheEntry, ifAbsent: Bool) -> Bool
    /// Stores `entry`; `done(false)` when `ifAbsent` and a live entry exists. `settling` is what `settlesAtOnce`
    /// answered for this entry just before, in this iteration (so the tier decides once). A write the tier cannot
    /// take now (its queue is full) fails at once, inside this call.
    func write(_ key: CacheKey, _ entry: CacheEntry, ifAbsent: Bool, now: Int64, settling: Bool,
               _ done: @escaping (Result<Bool, StoreError>) -> Void)
    /// `write(…, settling: true)` of a fast-path set (`CacheStore.setSettling`): no completion of its own; the tier
    /// hands `set` back to `settledSets` once the record is written (or failed), in the order taken.
    func writeSettling(_ set: consuming SettlingSet, _ entry: CacheEntry, now: Int64)
    /// Who hears of the fast-path sets settled (the store, set once when it is made).
    var settledSets: SettledSets? { get set }
    /// Takes a finished file as the value of `key` (`CacheStore.adopt`); the file is gone from its path after.
    func adopt(_ key: CacheKey, _ file: AdoptedFile, _ done: @escaping (Result<Bool, StoreError>) -> Void)
    /// `done(true)` when a live entry was removed.
    func remove(_ key: CacheKey, now: Int64, _ done: @escaping (Result<Bool, StoreError>) -> Void)
    /// A new expiry (`nil`: never) for a live entry; `done(false)` when there is none.
    func retime(_ key: CacheKey, expiresAt: Int64?, now: Int64, _ done: @escaping (Result<Bool, StoreError>) -> Void)
    func list(namespace: String, prefix: String, cursor: String?, limit: Int, now: Int64,
              _ done: @escaping (Result<(keys: [ListedKey], more: Bool), StoreError>) -> Void)
    /// `done(n)`: the live entries removed.
    func clear(namespace: String, now: Int64, _ done: @escaping (Result<Int, StoreError>) -> Void)
    /// Drops expired entries; `accessed` were read since the last sweep (for the tier's LRU order).
    func sweep(now: Int64, accessed: [CacheKey])
    /// Once per loop iteration, before the loop sleeps: settles the writes taken `settlesAtOnce` (their replies are
    /// produced now), runs `flushReplies`, repeats while that produced more such writes, then starts the work the
    /// iteration queued.
    func endOfIteration(flushReplies: () -> Void)
    /// Finishes what was acknowledged and stops; completions of queued work are not run.
    func close()
}

/// What a tier read: a value in memory, or one to be read from its file in pieces.
public enum StoredValue {
    case entry(CacheEntry)
    case blob(StoredBlob)

    public var size: Int {
        switch self {
        case .entry(let e): return e.value.count
        case .blob(let b): return b.size
        }
    }

    public var createdAt: Int64 {
        switch self {
        case .entry(let e): return e.createdAt
        case .blob(let b): return b.createdAt
        }
    }

    public var expiresAt: Int64? {
        switch self {
        case .entry(let e): return e.expiresAt
        case .blob(let b): return b.expiresAt
        }
    }
}

extension StoreTier {
    /// Tiers that keep every value in one piece read it whole.
    public func readValue(_ key: CacheKey, now: Int64, streamAbove: Int?, _ done: @escaping (Result<StoredValue?, StoreError>) -> Void) {
        read(key, now: now) { done($0.map { $0.map(StoredValue.entry) }) }
    }

    public func reportDamaged(_ blob: StoredBlob) {}
}

/// A tier's own counts, reported with its answers.
public struct TierUsage: Sendable, Equatable {
    public var bytes = 0
    public var entries = 0
    public var evictions: UInt64 = 0
    public var expirations: UInt64 = 0
    /// Values read back damaged (their checksum did not match): answered as misses and removed.
    public var damaged: UInt64 = 0
    /// The tier's disk is full: it refuses new values (full mode) until there is room again.
    public var diskFull = false

    public init() {}
}

/// A fast-path set carried by the tier until its journal record is written: what the store needs then, as a plain
/// value. A closure per set (its context allocated, then released capture by capture when dropped) cost ~1,500
/// instructions of a set's ~12,000 on the loop thread (callgrind, issue 12).
public struct SettlingSet {
    let key: CacheKey
    let ticket: MutationTracker.Ticket
    /// Kept until the set settles (a connection that closed meanwhile writes nothing: `setSettled` checks).
    let target: SetAcknowledging
    let id: UInt64
    /// Where the memory tier put the entry (`MemoryLRU.lastSet`), handed to the journal's record.
    var memorySlot = SlotHint.none
}

/// What hears a tier's fast-path sets settle (`CacheStore`).
public protocol SettledSets: AnyObject {
    func settled(_ set: SettlingSet, failure: StoreError?)
}
