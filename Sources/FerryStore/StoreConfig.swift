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
    /// Values up to this size live in the index row; larger ones in blob files.
    public var inlineThreshold = 64 * 1024
    public static let diskOverheadPerEntry = 128

    public init(directory: String) { self.directory = directory }
}

/// Counters the store keeps for `stats`.
public struct StoreCounters: Sendable {
    public var memoryHits: UInt64 = 0
    public var diskHits: UInt64 = 0
    public var misses: UInt64 = 0
    public var sets: UInt64 = 0
    public var memoryEvictions: UInt64 = 0
    public var diskEvictions: UInt64 = 0
    public var expirations: UInt64 = 0
    public var memoryBytes = 0
    public var memoryEntries = 0
    public var diskBytes = 0
    public var diskEntries = 0
}
