/// What the disk worker has not been given of the journal yet, as the loop thread (`DiskTier`) counts it: written
/// records waiting for the next hand-off, the records the memory tier keeps instead (`JournalKeeping`), and the
/// sequence number the worker may treat as complete (`upTo`). Loop thread only.
///
/// `upTo` is what the worker writes as the index's `applied_seq` once it applied what it was handed, and a `kill -9`
/// replay starts after it: it never passes a record the worker has not been handed, so it stays below the oldest
/// record the memory tier keeps, and never goes back.
///
/// ```swift
/// var handOff = JournalHandOff(lastWrittenSeq: 0)
/// handOff.written(upTo: 3)
/// handOff.keep(record1)                     // seq 1, kept in memory
/// handOff.add(record2)                      // seq 2, for the worker
/// handOff.take(oldestKeptSeq: 1)            // ([record2], upTo: 0): nothing past the kept seq 1
/// ```
struct JournalHandOff {
    /// Written records for the next hand-off, and their disk cost.
    private(set) var records: [JournalRecord] = []
    private(set) var cost = 0
    /// Records the memory tier keeps, and their disk cost (counted as the worker counts pending sets).
    private(set) var keptEntries = 0
    private(set) var keptCost = 0
    /// The sequence number of the last record written, and the highest `upTo` handed over.
    private var lastWrittenSeq: UInt64
    private var handedUpTo: UInt64
    /// Records handed over since start (for tests: a key rewritten while kept is handed over once).
    private(set) var recordsHandedOver = 0

    /// `lastWrittenSeq`: what start-up replayed or found applied; the worker has everything up to it.
    init(lastWrittenSeq: UInt64) {
        self.lastWrittenSeq = lastWrittenSeq
        handedUpTo = lastWrittenSeq
    }

    /// The journal wrote records up to `seq`.
    mutating func written(upTo seq: UInt64) { lastWrittenSeq = max(lastWrittenSeq, seq) }

    /// A written record for the next hand-off.
    mutating func add(_ record: JournalRecord) {
        cost += record.cost
        records.append(record)
    }

    /// A written record the memory tier keeps.
    mutating func keep(_ record: borrowing JournalRecord) { count(kept: record, +1) }

    /// A kept record superseded by a newer one of its key: gone without being handed over.
    mutating func dropKept(_ record: borrowing JournalRecord) { count(kept: record, -1) }

    /// A kept record for the next hand-off after all (it left memory, a write after it failed, or a job needs it).
    mutating func addKept(_ record: JournalRecord) {
        count(kept: record, -1)
        add(record)
    }

    /// The records to hand over and the `upTo` to hand with them: below `oldestKeptSeq` when the memory tier keeps
    /// any, else the last written; nil when there is nothing new to tell the worker.
    mutating func take(oldestKeptSeq: UInt64?) -> (records: [JournalRecord], cost: Int, upTo: UInt64)? {
        let upTo = max(handedUpTo, oldestKeptSeq.map { $0 - 1 } ?? lastWrittenSeq)
        guard !records.isEmpty || upTo > handedUpTo else { return nil }
        handedUpTo = upTo
        recordsHandedOver += records.count
        defer {
            records.removeAll(keepingCapacity: true)
            cost = 0
        }
        return (records, cost, upTo)
    }

    private mutating func count(kept record: borrowing JournalRecord, _ sign: Int) {
        keptEntries += sign
        keptCost += sign * record.cost
    }
}
