import FerryCache

/// What the disk tier asks of the memory tier about journaled sets (`JournalKeeping`): a small set whose record the
/// journal wrote stays in the memory tier marked dirty (`MemoryLRU.markDirty`) instead of being handed to the disk
/// worker record by record. The worker gets each dirty key's newest value once, when the disk tier hands them all
/// over (`takeKept`: before any job that needs the index current, and at each apply); a dirty value that leaves
/// memory first (evicted, deleted, expired) is handed over then (`journaledLeft`).
///
/// Why: under 50 connections of sets to 10,000 keys the worker took every record into its pending table — hashing,
/// comparing and replacing an entry per set, on the core the loop shares in `make bench` — 31 % of the daemon's CPU
/// with 16 sets pipelined (perf, BENCHMARKS.md, issue 12), for keys that were rewritten hundreds of times before the
/// next apply wrote each once. The journal still holds every record, so a crash loses nothing: the index's
/// `applied_seq` never passes a kept value (`oldestKeptSeq`).
///
/// A set replacing a dirty value in memory displaces it (`displaced`): the old value is superseded once the new
/// record is written, and handed over if that write fails, so a failed write never loses the value before it.
extension CacheStore: JournalKeeping {
    func keep(_ record: borrowing JournalRecord) -> KeptRecord {
        switch memory.markDirty(record.key, seq: record.seq, at: record.memorySlot, holding: { CacheStore.same($0, record.entry) }) {
        case .notHeld: .handOver
        case .marked: .kept
        case .remarked: .keptInPlaceOfTheSame
        }
    }

    func takeDisplaced() -> [JournalRecord] {
        guard !displaced.isEmpty else { return [] }
        defer { displaced.removeAll(keepingCapacity: true) }
        return displaced
    }

    func takeKept() -> [JournalRecord] {
        memory.takeDirty().map { JournalRecord(seq: $0.seq, key: $0.key, entry: $0.value) }
    }

    var oldestKeptSeq: UInt64? {
        let kept = memory.oldestDirtySeq
        guard let first = displaced.lazy.map(\.seq).min() else { return kept }
        return min(kept ?? first, first)
    }

    /// A dirty value left the memory tier: displaced by the set being journaled (kept until that set's record is
    /// written), or gone for another reason (handed to the worker now, in its place before any later job).
    /// `replacedBySet`: a `set` of the record's key replaced it in place (so while `journaling`, the set being
    /// journaled did: known without comparing keys).
    func journaledLeft(_ record: JournalRecord, replacedBySet: Bool) {
        if journaling && replacedBySet {
            displaced.append(record)
        } else {
            journalTier?.takeLeft(record)
        }
    }

    /// The very entry a record was written for: the same bytes (the same storage, or equal) and times.
    static func same(_ a: borrowing CacheEntry, _ b: borrowing CacheEntry) -> Bool {
        guard a.createdAt == b.createdAt, a.expiresAt == b.expiresAt, a.value.count == b.value.count else { return false }
        let sameStorage = a.value.withUnsafeBufferPointer { x in b.value.withUnsafeBufferPointer { $0.baseAddress == x.baseAddress } }
        return sameStorage || a.value == b.value
    }
}

/// The memory tier's side of the journal (`CacheStore+Journaled.swift`), as the disk tier uses it. Loop thread.
protocol JournalKeeping: AnyObject {
    /// The journal wrote `record`: whether the memory tier holds that very entry for its key and keeps it, marked
    /// dirty, for `takeKept`, or the record is the disk tier's to hand over.
    func keep(_ record: borrowing JournalRecord) -> KeptRecord
    /// Dirty values replaced by sets journaled since the last call (superseded once those are written).
    func takeDisplaced() -> [JournalRecord]
    /// Every kept value as a record, oldest first; none is kept afterwards.
    func takeKept() -> [JournalRecord]
    /// The lowest sequence number of a value still kept (or displaced), or nil.
    var oldestKeptSeq: UInt64? { get }
}

/// What became of a written journal record (`JournalKeeping.keep`).
enum KeptRecord {
    /// The memory tier does not hold its entry: the disk tier hands it over.
    case handOver
    /// Kept.
    case kept
    /// Kept, standing for an earlier record of the same entry that was kept (the same set sent twice in one
    /// iteration): that one is superseded, as a displaced value is.
    case keptInPlaceOfTheSame
}
