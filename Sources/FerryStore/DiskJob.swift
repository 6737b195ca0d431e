import FerryCache

/// Disk work, as the loop thread asks for it.
enum DiskJob: Sendable {
    /// A value larger than `streamAbove` that lives in a blob file comes back as `.blob` (pinned, not read).
    case get(CacheKey, now: Int64, streamAbove: Int?)
    case put(CacheKey, CacheEntry, ifAbsent: Bool, now: Int64)
    /// A finished file (in the store's directory) becomes the value of the key, renamed into the blob files.
    case adopt(CacheKey, AdoptedFile)
    case delete(CacheKey, now: Int64)
    case touch(CacheKey, expiresAt: Int64?, now: Int64)
    case list(namespace: String, prefix: String, cursor: String?, limit: Int, now: Int64)
    case clear(namespace: String, now: Int64)
    /// Deletes expired rows and records accesses served from memory (the disk tier's LRU order). With
    /// `applyPending`, the journal's pending sets are applied to the index first (`StoreConfig.applyIntervalMs`);
    /// without, they stay pending and the journal file at `syncJournal`, if any, is synced instead (`everysec`).
    case sweep(now: Int64, accessed: [CacheKey], applyPending: Bool, syncJournal: String?)
    /// Small sets the loop thread wrote to the journal (and acknowledged), in their place among the other jobs; the
    /// worker has every journaled set up to sequence number `upTo` once it has these (the memory tier keeps the
    /// newer ones it still holds until a job needs them: `JournalKeeping`).
    case journaled([JournalRecord], upTo: UInt64)
    /// A journal file the loop has sealed, deleted once everything it holds is in the index: with `applyNow`,
    /// everything pending is applied at once; else the file waits for the next apply (a sweep, a threshold, any other
    /// job), so a hot key rewritten in many files is written into the index once, not once a file.
    case retireJournal(path: String, applyNow: Bool)
    /// A reply finished reading a pinned blob: remove the file if no row points at it any more.
    case releaseBlob(hash: String)
    /// A streamed blob did not match its checksum: drop the row if it still points at that file, and count it.
    case damagedBlob(CacheKey, hash: String)
}

extension DiskJob {
    /// Whether the worker must have every journaled set before this job: anything that applies the pending sets to
    /// the index or reads it beyond one key (a get is answered from the pending sets and the index as they are, and a
    /// key the memory tier keeps is a memory hit, never a disk read).
    var needsEveryJournaledSet: Bool {
        switch self {
        case .get, .journaled, .releaseBlob: false
        case .sweep(_, _, let applyPending, _): applyPending
        default: true
        }
    }
}

enum DiskResult: Sendable {
    case entry(CacheEntry?)
    case blob(StoredBlob)
    case stored(Bool)
    case deleted(Bool)
    case touched(Bool)
    case listed([ListedKey], more: Bool)
    case cleared(Int)
    case swept
    case failed(StoreError)
}

public struct ListedKey: Sendable, Equatable {
    public var key: String
    public var size: Int
    public var expiresAt: Int64?
}

/// What one batch did, for the loop thread.
struct BatchOutcome: Sendable {
    var results: [DiskResult]
    var diskBytes: Int
    var diskEntries: Int
    var evictions: Int
    var expirations: Int
    /// Values read back that did not match their checksum (each answered as a miss and removed).
    var damaged = 0
    /// Full mode: the reserve is given back and new values are refused.
    var diskFull = false
    /// Journaled value bytes the worker holds unapplied (what a full disk must still find room for).
    var pendingBytes = 0
    /// Lines for the daemon's log (entering and leaving full mode).
    var notices: [String] = []
}
