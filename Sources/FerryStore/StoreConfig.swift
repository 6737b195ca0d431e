/// The storage engine's settings; the defaults are the documented ones.
public struct StoreConfig: Sendable {
    /// The cache directory: `index.db` (SQLite, WAL) and `blobs/`.
    public var directory: String
    /// Memory tier budget, exact: value bytes + key bytes + 96 bytes per entry.
    public var memoryBudget = 256 * 1024 * 1024
    /// Disk tier budget: value bytes + key bytes + `diskOverheadPerEntry` per entry.
    public var diskBudget = 2 * 1024 * 1024 * 1024
    /// Eviction brings the disk tier down to this share of its budget, so writes near the limit do not evict
    /// on every call.
    public var diskLowWatermark = 0.9
    public var maxValueBytes = 16 * 1024 * 1024
    /// The largest file the store takes as a value (`CacheStore.adopt`, a fetched body): half the disk budget, so
    /// that one body never evicts everything else.
    public var maxAdoptedBytes: Int { diskBudget / 2 }
    /// Values up to this size live in the index row; larger ones in blob files.
    public var inlineThreshold = 64 * 1024
    public static let diskOverheadPerEntry = 128
    /// When acknowledged writes reach the disk itself, not only the OS (what survives a power loss).
    public var fsync = FsyncPolicy.everysec
    /// How often reads are recorded in the disk tier's LRU order (`accessed_at`): the order is approximate, as
    /// Redis's is, because recording every key read each second cost the loop's core 10 % under a read load
    /// (10,000 row updates a second beside it). A read is never lost, only recorded up to this much later.
    public var accessRecordIntervalMs: Int64 = 30_000
    /// How often a sweep applies the journal's pending sets to the SQLite index (sooner when 20,000 keys or 8 MiB
    /// of values are pending, when sealed journal files reach `JournalRoom.appliesSealed`, when any other job than a
    /// small set or a get needs the index, and at every sweep while the disk is short of room). Not every second:
    /// an apply costs ~12 µs a key on the worker, and a hot key set all the time was written into the index once a
    /// second (10,000 keys: 12 % of the core the loop shares in `make bench`, in bursts that set the set p99).
    /// Durability does not wait for it: the journal holds every acknowledged set, and is synced each sweep
    /// (`everysec`) while an apply is not due.
    public var applyIntervalMs: Int64 = 5_000

    public init(directory: String) { self.directory = directory }
}

/// `--fsync`, as Redis's `appendfsync`. Every policy survives the daemon being killed (`kill -9`): acknowledged
/// writes are in the OS once acknowledged. They differ in what a power loss or kernel crash may cost.
///
/// ```swift
/// FsyncPolicy(rawValue: "always")   // .always
/// ```
public enum FsyncPolicy: String, Sendable, CaseIterable {
    /// Each write is on the disk before it is acknowledged: the journal is synced after each loop iteration's
    /// append, every index commit is synced (SQLite `synchronous=FULL`), blob files are synced before they are
    /// named. Nothing acknowledged is lost; each iteration with sets waits for the disk.
    case always
    /// About once a second: the journal file is synced (or applied to the index, which is synced before the
    /// journal is deleted), and the index is synced at every checkpoint (`synchronous=NORMAL`). A power loss costs
    /// at most about the last second of acknowledged writes.
    case everysec
    /// Never asked: the OS writes when it likes (`synchronous=OFF`). A power loss costs what the OS had not
    /// written yet, typically up to half a minute.
    case no

    /// The SQLite `synchronous` setting of this policy.
    var sqliteSynchronous: String {
        switch self {
        case .always: return "FULL"
        case .everysec: return "NORMAL"
        case .no: return "OFF"
        }
    }
}

/// Counters the store keeps for `stats`.
public struct StoreCounters: Sendable {
    public var memoryHits: UInt64 = 0
    public var diskHits: UInt64 = 0
    /// Values of shared namespaces found in the fleet's tier (`CacheStore.remote`) after a local miss.
    public var fleetHits: UInt64 = 0
    public var misses: UInt64 = 0
    public var sets: UInt64 = 0
    public var memoryEvictions: UInt64 = 0
    public var diskEvictions: UInt64 = 0
    public var expirations: UInt64 = 0
    public var memoryBytes = 0
    public var memoryEntries = 0
    public var diskBytes = 0
    public var diskEntries = 0
    /// Values read from disk that failed their checksum (a miss each, and removed).
    public var damaged: UInt64 = 0
    /// Full mode: the disk is full, new values are refused (reads, deletes and clears work).
    public var diskFull = false
}
